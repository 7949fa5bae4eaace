// Starts `kvengine serve` on a free loopback port for a test file and stops it afterwards.
import { spawn } from 'node:child_process';
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

// Spawns the server and waits (bounded) until GET /health answers 200.
export async function startServer(extraArgs = []) {
  const bin = process.env.KVENGINE_BIN;
  if (!bin) throw new Error('set KVENGINE_BIN to the kvengine binary');
  const port = await freePort();
  const args = ['serve', '-m', process.env.KVENGINE_TEST_MODEL || 'tiny', '--host', '127.0.0.1',
    '--port', String(port), ...extraArgs];
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
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

// Reads one metric value (first sample of the name) from /metrics.
export async function metric(base, name) {
  const text = await (await fetch(`${base}/metrics`)).text();
  for (const line of text.split('\n')) {
    if (line.startsWith(name + ' ') || line.startsWith(name + '{')) {
      return Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  throw new Error(`metric ${name} not found`);
}
