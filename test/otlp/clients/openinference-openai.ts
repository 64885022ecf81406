// An agent on the official OpenAI client under Arize's OpenInference instrumentation
// (@arizeai/openinference-instrumentation-openai, Phoenix's conventions): the instrumentation makes the LLM spans;
// the agent and its tool call are wrapped by OpenInference's own helpers (AGENT and TOOL spans), in a context that
// names the conversation and the user (OpenInference's session.id and user.id on every span: contract §10).
import { context } from '@opentelemetry/api';
import { OpenAIInstrumentation } from '@arizeai/openinference-instrumentation-openai';
import { setSession, setUser, traceAgent, traceTool } from '@arizeai/openinference-core';
import OpenAI from 'openai';
import { runToEnd, startTracing } from './tracing';
import { runSupportAgent, type AgentTracing } from './support-agent';

const provider = startTracing('openinference-agent');
// OpenInference's way for a module loaded before the instrumentation (ES modules, bundles): patch it by hand.
new OpenAIInstrumentation().manuallyInstrument(OpenAI);

const tracing: AgentTracing = {
  agent: (name, input, run) => traceAgent(run, { name })(input),
  tool: (name, args, run) => traceTool(run, { name })(args),
};

const conversation = setUser(setSession(context.active(), { sessionId: 'conv-openinference' }), { userId: 'alice' });

runToEnd(
  () => context.with(conversation, () => runSupportAgent(new OpenAI(), tracing)),
  () => provider.shutdown(),
);
