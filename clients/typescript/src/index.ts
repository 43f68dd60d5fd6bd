// A client of `sessions serve` (API.md at the root of the sessionstore
// repository), and an OpenAI Agents SDK Session over it. No runtime
// dependency beyond Node.
//
//   import { StoreSession } from '@sessionstore/agents';
//   const session = new StoreSession('my-conversation'); // created when missing
//   const result = await run(agent, 'hello', { session });
//   await session.close(); // releases the lease
//
// The server is found at socketPath (a unix socket), else at url
// (http://127.0.0.1:PORT, with token), else at $SESSIONSTORE_SOCKET, else
// at $SESSIONSTORE_URL with $SESSIONSTORE_TOKEN.

import * as http from 'node:http';

/** An Agents SDK item: any JSON object, stored and given back exactly. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Item = any;

/** An error the server answered: its status, its code (API.md lists
 * them), its message, and for lease errors the lease as it is. */
export class ServerError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly lease?: Record<string, unknown>,
  ) {
    super(`${status} ${code}: ${message}`);
    this.name = 'ServerError';
  }
}

/** The session changed under a handle that ended: another writer wrote
 * between this client's handle ending and its resuming. */
export class ConflictError extends ServerError {}

export interface ClientOptions {
  socketPath?: string;
  url?: string;
  token?: string;
  timeoutMs?: number;
}

type Query = Record<string, string | number | string[] | undefined>;

/** A client of one server: one method per endpoint. */
export class Client {
  private readonly socketPath?: string;
  private readonly url?: URL;
  private readonly token?: string;
  private readonly timeoutMs: number;
  private readonly agent: http.Agent;

  constructor(opts: ClientOptions = {}) {
    let { socketPath, url, token } = opts;
    if (!socketPath && !url) {
      socketPath = process.env.SESSIONSTORE_SOCKET;
      if (!socketPath) {
        url = process.env.SESSIONSTORE_URL;
        token = token ?? process.env.SESSIONSTORE_TOKEN;
      }
    }
    if (!socketPath && !url) {
      throw new Error('no server: pass socketPath or url, or set $SESSIONSTORE_SOCKET');
    }
    this.socketPath = socketPath;
    this.url = url ? new URL(url) : undefined;
    this.token = token;
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.agent = new http.Agent({ keepAlive: true });
  }

  /** Closes idle connections (a kept-alive connection keeps a process alive). */
  close(): void {
    this.agent.destroy();
  }

  private open(method: string, path: string, body?: unknown, query?: Query): Promise<http.IncomingMessage> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v === undefined) continue;
      for (const one of Array.isArray(v) ? v : [v]) params.append(k, String(one));
    }
    const qs = params.toString();
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body), 'utf8');
    const headers: Record<string, string> = {};
    if (data) {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = String(data.length);
    }
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          method,
          path: qs ? `${path}?${qs}` : path,
          headers,
          agent: this.agent,
          timeout: this.timeoutMs,
          ...(this.socketPath ? { socketPath: this.socketPath } : { host: this.url!.hostname, port: this.url!.port || 80 }),
        },
        resolve,
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within ${this.timeoutMs} ms`)));
      req.on('error', reject);
      req.end(data);
    });
  }

  /** Sends one request and returns its JSON answer, or throws ServerError. */
  async request(method: string, path: string, body?: unknown, query?: Query): Promise<Record<string, Item>> {
    const resp = await this.open(method, path, body, query);
    const chunks: Buffer[] = [];
    for await (const c of resp) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let answer: Record<string, Item>;
    try {
      answer = raw ? JSON.parse(raw) : {};
    } catch {
      throw new ServerError(resp.statusCode ?? 0, 'malformed_answer', raw.slice(0, 200));
    }
    if ((resp.statusCode ?? 500) >= 400) {
      throw new ServerError(resp.statusCode ?? 500, answer.code ?? '', answer.error ?? '', answer.lease);
    }
    return answer;
  }

  private static id(sessionId: string): string {
    return encodeURIComponent(sessionId);
  }

  health() {
    return this.request('GET', '/v1/health');
  }
  create(opts: { id?: string; title?: string; labels?: Record<string, string>; holder?: string; project?: string } = {}) {
    const body: Record<string, unknown> = {};
    if (opts.id) body.id = opts.id;
    if (opts.title) body.title = opts.title;
    if (opts.labels) body.labels = opts.labels;
    if (opts.holder) body.holder = opts.holder;
    if (opts.project) body.workspace = { project: opts.project };
    return this.request('POST', '/v1/sessions', body);
  }
  resume(sessionId: string, opts: { holder?: string; waitMs?: number } = {}) {
    return this.request('POST', `/v1/sessions/${Client.id(sessionId)}/handles`, { holder: opts.holder ?? '', wait_ms: opts.waitMs ?? 0 });
  }
  heartbeat(handle: string) {
    return this.request('POST', `/v1/handles/${encodeURIComponent(handle)}/heartbeat`);
  }
  release(handle: string) {
    return this.request('DELETE', `/v1/handles/${encodeURIComponent(handle)}`);
  }
  delete(sessionId: string, handle: string) {
    return this.request('DELETE', `/v1/sessions/${Client.id(sessionId)}`, { handle });
  }
  addMessages(sessionId: string, handle: string, messages: unknown[], revision?: number) {
    return this.write(sessionId, 'messages', handle, revision, { messages });
  }
  addItems(sessionId: string, handle: string, items: Item[], revision?: number) {
    return this.write(sessionId, 'items', handle, revision, { items });
  }
  pop(sessionId: string, handle: string, revision?: number) {
    return this.write(sessionId, 'pop', handle, revision, {});
  }
  clear(sessionId: string, handle: string, revision?: number) {
    return this.write(sessionId, 'clear', handle, revision, {});
  }
  setLabels(sessionId: string, handle: string, set: Record<string, string> = {}, remove: string[] = [], revision?: number) {
    return this.write(sessionId, 'labels', handle, revision, { set, remove });
  }
  private write(sessionId: string, what: string, handle: string, revision: number | undefined, fields: Record<string, unknown>) {
    return this.request('POST', `/v1/sessions/${Client.id(sessionId)}/${what}`, { handle, ...(revision ? { revision } : {}), ...fields });
  }
  get(sessionId: string) {
    return this.request('GET', `/v1/sessions/${Client.id(sessionId)}`);
  }
  messages(sessionId: string, last?: number) {
    return this.request('GET', `/v1/sessions/${Client.id(sessionId)}/messages`, undefined, { last });
  }
  items(sessionId: string, limit?: number) {
    return this.request('GET', `/v1/sessions/${Client.id(sessionId)}/items`, undefined, { limit });
  }
  lease(sessionId: string) {
    return this.request('GET', `/v1/sessions/${Client.id(sessionId)}/lease`);
  }
  list(q: { state?: string[]; kind?: string[]; labels?: Record<string, string>; project?: string; order?: string; limit?: number; cursor?: string } = {}) {
    return this.request('GET', '/v1/sessions', undefined, {
      state: q.state, kind: q.kind, project: q.project, order: q.order, limit: q.limit, cursor: q.cursor,
      label: q.labels ? Object.entries(q.labels).map(([k, v]) => `${k}=${v}`) : undefined,
    });
  }
  search(text: string, q: { labels?: Record<string, string>; project?: string; limit?: number; noTools?: boolean } = {}) {
    return this.request('GET', '/v1/search', undefined, {
      q: text, project: q.project, limit: q.limit, no_tools: q.noTools ? '1' : undefined,
      label: q.labels ? Object.entries(q.labels).map(([k, v]) => `${k}=${v}`) : undefined,
    });
  }
}

// The codes of a handle that ended without the session changing hands for
// good: the session resumes, if nobody wrote meanwhile.
const ENDED = new Set(['handle_expired', 'handle_released', 'unknown_handle']);

export interface StoreSessionOptions {
  client?: Client;
  holder?: string;
  title?: string;
  labels?: Record<string, string>;
  heartbeat?: boolean;
}

/**
 * A session of the store in the shape of the Agents SDK's Session
 * (getSessionId, getItems(limit?), addItems, popItem, clearSession).
 * Items round-trip exactly: what getItems returns deep-equals what
 * addItems stored, whatever the item.
 *
 * The first write takes the session's lease through a handle (creating the
 * session when it does not exist) and holds it until close(): no other
 * writer writes the session meanwhile. A timer heartbeats the handle; if
 * the handle ends anyway (the process was suspended past the server's
 * grace), the next write resumes the session, provided nobody wrote it in
 * between (else ConflictError).
 */
export class StoreSession {
  readonly client: Client;
  private sessionId?: string;
  private handle?: string;
  private revision?: number;
  private timer?: NodeJS.Timeout;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(sessionId?: string, private readonly opts: StoreSessionOptions = {}) {
    this.sessionId = sessionId;
    this.client = opts.client ?? new Client();
  }

  async getSessionId(): Promise<string> {
    if (!this.sessionId) await this.serial(() => this.ensureHandle());
    return this.sessionId!;
  }

  async getItems(limit?: number): Promise<Item[]> {
    if (!this.sessionId) return [];
    try {
      return (await this.client.items(this.sessionId, limit)).items;
    } catch (e) {
      if (e instanceof ServerError && e.code === 'not_found') return [];
      throw e;
    }
  }

  async addItems(items: Item[]): Promise<void> {
    if (items.length === 0) return;
    await this.write((id, h) => this.client.addItems(id, h, items));
  }

  async popItem(): Promise<Item | undefined> {
    const answer = await this.write((id, h) => this.client.pop(id, h));
    return answer.item ?? undefined;
  }

  async clearSession(): Promise<void> {
    await this.write((id, h) => this.client.clear(id, h));
  }

  /** Releases the session's lease (the session stays) and the client's connections. */
  async close(): Promise<void> {
    await this.serial(async () => {
      if (this.timer) clearInterval(this.timer);
      this.timer = undefined;
      const h = this.handle;
      this.handle = undefined;
      if (h) {
        try {
          await this.client.release(h);
        } catch (e) {
          if (!(e instanceof ServerError)) throw e; // already ended: nothing held
        }
      }
    });
    if (!this.opts.client) this.client.close();
  }

  // serial runs the session's writes one at a time, in call order.
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private write(fn: (id: string, handle: string) => Promise<Record<string, Item>>): Promise<Record<string, Item>> {
    return this.serial(async () => {
      await this.ensureHandle();
      try {
        const answer = await fn(this.sessionId!, this.handle!);
        this.revision = answer.revision;
        return answer;
      } catch (e) {
        if (!(e instanceof ServerError) || !ENDED.has(e.code)) throw e;
        this.handle = undefined;
        await this.ensureHandle(this.revision);
        const answer = await fn(this.sessionId!, this.handle!);
        this.revision = answer.revision;
        return answer;
      }
    });
  }

  private async ensureHandle(expect?: number): Promise<void> {
    if (this.handle) return;
    const holder = this.opts.holder ?? 'typescript-agents';
    let answer: Record<string, Item>;
    if (!this.sessionId) {
      answer = await this.client.create({ title: this.opts.title, labels: this.opts.labels, holder });
    } else {
      try {
        answer = await this.client.resume(this.sessionId, { holder });
      } catch (e) {
        if (!(e instanceof ServerError) || e.code !== 'not_found') throw e;
        answer = await this.client.create({ id: this.sessionId, title: this.opts.title, labels: this.opts.labels, holder });
      }
    }
    if (expect !== undefined && answer.revision !== expect) {
      await this.client.release(answer.handle);
      throw new ConflictError(409, 'conflict', `session ${this.sessionId} was written by another writer (revision ${answer.revision}, this client knew ${expect})`);
    }
    this.sessionId = answer.id;
    this.handle = answer.handle;
    this.revision = answer.revision;
    if (this.opts.heartbeat !== false && !this.timer) {
      const every = Math.max((answer.grace_ms ?? 30_000) / 3, 50);
      this.timer = setInterval(() => {
        const h = this.handle;
        if (h) this.client.heartbeat(h).catch(() => undefined); // the next write finds out and resumes
      }, every);
      this.timer.unref();
    }
  }
}
