// Runs in every jest worker before the tests: the process is in test mode (responses are schema-checked).
process.env.NODE_ENV = 'test';
