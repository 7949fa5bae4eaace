// Starts `kvengine serve` on a free loopback port for a test file and stops it afterwards.
import { execFileSync, spawn } from 'node:child_process';
import net from 'node:net';

export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// Spawns the server (with `env` added to this process's environment) and waits (bounded) until
// GET /health answers 200.
export async function startServer(extraArgs = [], env = {}) {
  const bin = process.env.KVENGINE_BIN;
  if (!bin) throw new Error('set KVENGINE_BIN to the kvengine binary');
  const port = await freePort();
  const args = ['serve', '-m', process.env.KVENGINE_TEST_MODEL || 'tiny', '--host', '127.0.0.1',
    '--port', String(port), ...extraArgs];
  const child = spawn(bin, args,
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let log = '';
  child.stdout.on('data', (d) => { log += d; });
  child.stderr.on('data', (d) => { log += d; });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server exited early:\n${log}`);
    try {
      const r = await fetch(`${base}/health`, { signal: AbortSignal.timeout(5000) });
      if (r.status === 200) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server not healthy within 60 s:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    base,
    log: () => log,
    // What a stuck test prints: the server's log, whether it still answers /health and
    // /metrics, and with KVENGINE_E2E_STACKS=1 every thread's stack (gdb).
    async diagnose() {
      let out = `server pid ${child.pid} at ${base}, exit code ${child.exitCode}\n`;
      for (const path of ['/health', '/metrics']) {
        try {
          const r = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(5000) });
          const text = await r.text();
          out += `GET ${path}: ${r.status}\n`;
          if (path === '/metrics') {
            out += text.split('\n').filter((l) => /^kvengine:(kv_blocks|num_requests)/.test(l))
              .join('\n') + '\n';
          }
        } catch (e) {
          out += `GET ${path}: ${e}\n`;
        }
      }
      if (process.env.KVENGINE_E2E_STACKS === '1' && child.exitCode === null) {
        try {
          out += execFileSync('gdb', ['-p', String(child.pid), '-batch', '-ex',
            'thread apply all bt'], { timeout: 60000, encoding: 'utf8' })
            .split('\n').filter((l) => /^(#|Thread)/.test(l)).join('\n') + '\n';
        } catch (e) {
          out += `gdb: ${e}\n`;
        }
      }
      return `${out}--- server log ---\n${log}`;
    },
    // SIGTERM, then a bounded wait for the exit: a server that does not stop fails the test with
    // its log (and is killed) instead of hanging it.
    async stop() {
      const exited = new Promise((r) => {
        if (child.exitCode !== null || child.signalCode !== null) r(true);
        else child.on('exit', () => r(true));
      });
      child.kill('SIGTERM');
      let timer;
      const timedOut = new Promise((r) => { timer = setTimeout(() => r(false), 30000); });
      const ok = await Promise.race([exited, timedOut]);
      clearTimeout(timer);
      if (!ok) {
        child.kill('SIGKILL');
        throw new Error(`server did not exit within 30 s of SIGTERM:\n${log}`);
      }
    },
  };
}

// Reads one metric value (first sample of the name) from /metrics; a server that does not
// answer within 10 s is an error, not a hang.
export async function metric(base, name) {
  let text;
  try {
    const r = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(10000) });
    text = await r.text();
  } catch (e) {
    throw new Error(`GET ${base}/metrics: ${e}`);
  }
  for (const line of text.split('\n')) {
    if (line.startsWith(name + ' ') || line.startsWith(name + '{')) {
      return Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  throw new Error(`metric ${name} not found`);
}
