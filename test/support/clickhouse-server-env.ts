// Runs in every jest worker of the project `clickhouse-server`, before each test file: the service of the file's tests
// (startTestApp, startChildService) talks to this worker's test ClickHouse server through CLICKHOUSE_URL. The change
// stays within the file's tests: jest gives each test file its own copy of process.env.
import { SERVER_MODE_DATABASE } from './clickhouse-servers-setup';

const urls = (process.env.RUNWATCH_TEST_CLICKHOUSE_URLS ?? '').split(' ').filter(Boolean);
const url = urls[Number(process.env.JEST_WORKER_ID ?? '1') - 1];
if (!url) throw new Error(`no test ClickHouse server for jest worker ${process.env.JEST_WORKER_ID}`);
process.env.CLICKHOUSE_URL = url;
process.env.CLICKHOUSE_DATABASE = SERVER_MODE_DATABASE;
