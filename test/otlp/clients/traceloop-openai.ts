// An agent on the official OpenAI client under Traceloop's OpenLLMetry SDK (@traceloop/node-server-sdk): its OpenAI
// instrumentation makes the model calls' spans, `withAgent` and `withTool` the agent's and the tool's. The SDK
// exports to TRACELOOP_BASE_URL/v1/traces with `Authorization: Bearer <TRACELOOP_API_KEY>`: a runwatch key. The
// conversation and the user are association properties (on every span: contract §10).
import * as traceloop from '@traceloop/node-server-sdk';
import OpenAI from 'openai';
import { runToEnd } from './tracing';
import { runSupportAgent, type AgentTracing } from './support-agent';

traceloop.initialize({
  appName: 'traceloop-agent',
  apiKey: process.env.TRACELOOP_API_KEY,
  // The SDK's way for a module loaded before it (ES modules, bundles): the modules to instrument, by hand.
  instrumentModules: { openAI: OpenAI },
});

const tracing: AgentTracing = {
  agent: (name, input, run) => traceloop.withAgent({ name }, run, input),
  tool: (name, args, run) => traceloop.withTool({ name }, run, args),
};

const conversation = {
  [traceloop.AssociationProperty.SESSION_ID]: 'conv-traceloop',
  [traceloop.AssociationProperty.USER_ID]: 'bob',
};

runToEnd(
  () => traceloop.withAssociationProperties(conversation, () => runSupportAgent(new OpenAI(), tracing)),
  () => traceloop.forceFlush(),
);
