"""The JavaScript interpreter worker, run by the gateway as ``node -e SOURCE MODE IN OUT TOKEN``.

Kept as a string here (not a ``.js`` file) so it ships inside the Python package with no package-data
configuration. It speaks the same protocol as ``python_driver.py``: JSON lines in on fd IN, out on fd
OUT, an end marker on stdout and stderr after each cell.

MODE ``once`` (stateless calls): a pre-started ``node -e``. It reads one request, runs it, and lets the
event loop drain exactly as ``node -e`` would (timers, callbacks, promises), then answers from the
``exit`` event and exits; fd 0 is the request's stdin. One process per call: nothing leaks.
MODE ``inline`` (sessions): a REPL. Cells run in the same global context (``vm.runInThisContext``), so globals
and ``var``/``let``/``const``/``function`` declarations persist; SIGINT (the gateway's timeout)
breaks a running cell without losing the session. Code using top-level ``await`` runs wrapped in an
async function (its declarations are local to that cell).
"""

SOURCE = r"""
(() => {
  'use strict';
  const fs = require('fs');
  const path = require('path');
  const util = require('util');
  const vm = require('vm');
  const { createRequire } = require('module');

  const [mode, inFd, outFd, token] = process.argv.slice(1);
  const controlIn = Number(inFd);
  const controlOut = Number(outFd);
  const TEXT_LIMIT = 2000000;
  process.argv.length = 1;

  const send = (message) => fs.writeSync(controlOut, JSON.stringify(message) + '\n');
  const clip = (text) => (text.length > TEXT_LIMIT
    ? text.slice(0, TEXT_LIMIT) + `\n[... ${text.length - TEXT_LIMIT} characters omitted]`
    : text);

  function writeMarkers(id) {
    const marker = `\u0000agentbox-end:${token}:${id}\u0000`;
    for (const stream of [process.stdout, process.stderr]) {
      try { stream.write(marker); } catch (err) { /* closed by the user: the gateway stops waiting */ }
    }
  }

  function describe(err) {
    if (err instanceof Error || (err && typeof err === 'object' && 'stack' in err)) {
      const stack = String(err.stack || `${err.name}: ${err.message}`).split('\n')
        .filter((line) => !/^\s+at .*(\[eval\]|node:)/.test(line));
      return { ename: String(err.name || 'Error'), evalue: clip(String(err.message ?? err)), traceback: stack };
    }
    const shown = clip(util.inspect(err));
    return { ename: 'Uncaught', evalue: shown, traceback: [`Uncaught ${shown}`] };
  }

  function exited(code) {
    const message = `the interpreter process exited with code ${code}`;
    return { ename: 'ProcessExited', evalue: message, traceback: [`ProcessExited: ${message}`] };
  }

  function compile(code, filename) {
    try {
      return { script: new vm.Script(code, { filename }), wrapped: false };
    } catch (err) {
      if (!(err instanceof SyntaxError) || !code.includes('await')) throw err;
      try {
        const script = new vm.Script(`(async () => {\n${code}\n})()`, { filename, lineOffset: -1 });
        return { script, wrapped: true };
      } catch (ignored) {
        throw err;
      }
    }
  }

  let interrupt = null;
  process.on('SIGINT', () => { if (interrupt) interrupt(new Error('Script execution was interrupted by `SIGINT`')); });

  async function runCell(request, count) {
    if (request.cwd) process.chdir(request.cwd);
    globalThis.require = createRequire(path.join(process.cwd(), '[eval]'));
    const { script, wrapped } = compile(request.code, `<cell-${count}>`);
    let value = script.runInThisContext({ breakOnSigint: true });
    if (wrapped) {
      const interrupted = new Promise((resolve, reject) => { interrupt = reject; });
      try {
        value = await Promise.race([value, interrupted]);
      } finally {
        interrupt = null;
      }
    }
    return value === undefined ? null : { 'text/plain': clip(util.inspect(value)) };
  }

  const reply = (id, count, result, error, exitCode) => ({
    event: 'reply', id, status: error ? 'error' : 'ok', exit_code: exitCode,
    execution_count: count, result, error,
  });

  function readRequestSync() {
    const chunks = [];
    const buffer = Buffer.alloc(65536);
    for (;;) {
      const n = fs.readSync(controlIn, buffer, 0, buffer.length, null);
      if (n === 0) break;
      chunks.push(Buffer.from(buffer.subarray(0, n)));
      if (buffer[n - 1] === 10) break;
    }
    const line = Buffer.concat(chunks).toString('utf8').trim();
    return line ? JSON.parse(line) : null;
  }

  function serveOnce() {
    send({ event: 'ready', pid: process.pid, executable: process.execPath, version: process.versions.node });
    const request = readRequestSync();
    fs.closeSync(controlIn);
    if (request === null) process.exit(0);
    let result = null;
    let error = null;
    process.on('exit', (code) => {
      if (code && !error) error = exited(code);
      writeMarkers(request.id);
      send(reply(request.id, 1, result, error, error && !code ? 1 : code));
    });
    process.on('uncaughtException', (err) => { error = describe(err); process.exit(1); });
    runCell(request, 1).then((value) => { result = value; }, (err) => { error = describe(err); process.exit(1); });
  }

  function serveSession() {
    const net = require('net');
    const queue = [];
    let busy = false;
    let count = 0;
    let current = null;
    const finish = (exitCode) => {
      if (!current) return;
      const { request, result, error } = current;
      current = null;
      writeMarkers(request.id);
      send(reply(request.id, count, result, error, exitCode));
    };
    process.on('exit', (code) => {
      if (current && !current.error && code) current.error = exited(code);
      finish(code);
    });
    const report = (label) => (err) => { process.stderr.write(`${label} ${util.inspect(err)}\n`); };
    process.on('uncaughtException', report('Uncaught'));
    process.on('unhandledRejection', report('Unhandled rejection:'));

    async function pump() {
      if (busy) return;
      busy = true;
      while (queue.length) {
        const request = queue.shift();
        count += 1;
        current = { request, result: null, error: null };
        try {
          current.result = await runCell(request, count);
        } catch (err) {
          current.error = describe(err);
        }
        await new Promise((resolve) => setImmediate(resolve));
        finish(current.error ? 1 : 0);
      }
      busy = false;
    }

    const input = new net.Socket({ fd: controlIn, readable: true, writable: false });
    let pending = '';
    input.setEncoding('utf8');
    input.on('data', (chunk) => {
      pending += chunk;
      let newline;
      while ((newline = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (line.trim()) queue.push(JSON.parse(line));
      }
      pump();
    });
    input.on('end', () => process.exit(0));
    send({ event: 'ready', pid: process.pid, executable: process.execPath, version: process.versions.node });
  }

  if (mode === 'once') serveOnce(); else serveSession();
})();
"""
