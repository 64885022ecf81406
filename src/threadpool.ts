// Node runs file-system calls, password hashing and the embedded ClickHouse's statements in one pool of threads
// (libuv's; 4 by default). A statement holds its thread for the whole of its run, so reads on every connection of the
// embedded engine (src/db/chdb-pool.ts) left the ingest log's writes waiting for a thread: ingest beside 200
// connections of reads fell to 55% of its rate alone (bench:overload; 79% with 16 threads). libuv reads
// UV_THREADPOOL_SIZE once, when the pool starts: this module is main.ts's first import, and a value the environment
// sets is kept.
process.env.UV_THREADPOOL_SIZE ??= '16';
