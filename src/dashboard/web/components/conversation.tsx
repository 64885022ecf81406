// A text of a run or a step as it reads best: chat messages as a conversation (who said what, the tools called and
// what they answered), JSON indented, anything else as it came.
import { conversationOf, type Message } from '../messages';

function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function MessageView({ message }: { message: Message }) {
  return (
    <li class={`message role-${message.role}`}>
      <div class="message-role">{message.role}</div>
      {message.parts.map((part, i) =>
        part.kind === 'text' ? (
          <div key={i} class="message-text">
            {part.text}
          </div>
        ) : (
          <div key={i} class={`message-${part.kind}`}>
            <span class="muted">{part.kind === 'tool_call' ? `calls ${part.name}` : 'result'}</span>
            <pre>{prettyJson(part.text)}</pre>
          </div>
        ),
      )}
    </li>
  );
}

export function TextView({ text, label }: { text: string; label?: string }) {
  const conversation = conversationOf(text);
  if (conversation)
    return (
      <ol class="conversation" aria-label={label}>
        {conversation.map((message, i) => (
          <MessageView key={i} message={message} />
        ))}
      </ol>
    );
  return <pre aria-label={label}>{prettyJson(text)}</pre>;
}
