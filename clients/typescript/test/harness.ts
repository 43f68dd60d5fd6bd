// Starts `sessions serve` on a fresh store for a test.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');

/** $SESSIONS_BIN, else the command built once from this repository. */
export function sessionsBinary(): string {
  if (process.env.SESSIONS_BIN) return process.env.SESSIONS_BIN;
  const out = join(tmpdir(), `sessions-tstest-${process.getuid?.() ?? 0}`);
  execFileSync('go', ['build', '-o', out, './cmd/sessions'], { cwd: root, stdio: 'inherit' });
  process.env.SESSIONS_BIN = out;
  return out;
}

export class Server {
  readonly tmp = mkdtempSync(join(tmpdir(), 'tssrv'));
  readonly store = join(this.tmp, 'st');
  readonly socket = join(this.tmp, 's.sock');
  readonly bin = sessionsBinary();
  private proc?: ChildProcess;
  private stderr = '';

  async start(): Promise<this> {
    execFileSync(this.bin, ['--dir', this.store, 'new', '--id', 'warmup']);
    const proc = spawn(this.bin, ['--dir', this.store, 'serve', '--socket', this.socket], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = proc;
    proc.stderr!.on('data', (d) => (this.stderr += d));
    const lines = createInterface({ input: proc.stdout! });
    const first: string = await new Promise((res, rej) => {
      lines.once('line', res);
      proc.once('exit', (code) => rej(new Error(`sessions serve exited ${code}: ${this.stderr}`)));
    });
    if (!first.startsWith('listening on unix:')) throw new Error(`sessions serve: ${first} ${this.stderr}`);
    return this;
  }

  sessions(args: string[], input?: string): { status: number; stderr: string } {
    try {
      execFileSync(this.bin, ['--dir', this.store, ...args], { input, stdio: ['pipe', 'pipe', 'pipe'] });
      return { status: 0, stderr: '' };
    } catch (e) {
      const err = e as { status: number; stderr: Buffer };
      return { status: err.status, stderr: err.stderr.toString() };
    }
  }

  async stop(): Promise<number | null> {
    const proc = this.proc!;
    const exited = new Promise<number | null>((res) => proc.once('exit', (code) => res(code)));
    proc.kill('SIGTERM');
    const code = await exited;
    rmSync(this.tmp, { recursive: true, force: true });
    return code;
  }
}
