// Test double for a model hub: the file layout and API responses of the Hugging Face Hub as its
// clients read them (@huggingface/hub, node-llama-cpp's downloader), on a loopback port. It serves
//   GET  /api/models/<repo>[/revision/<rev>]      model info with the revision's commit (sha)
//   GET  /api/models/<repo>/tree/<rev>            the file listing (LFS files with their SHA-256)
//   HEAD/GET /<repo>/resolve/<rev>/<path>         the file: ETag / X-Linked-Etag = SHA-256 of LFS
//        files, X-Repo-Commit, X-Linked-Size; LFS files redirect (302) to /cdn/<sha256> as the
//        hub does; ranges (206) are honoured
// and the faults a download meets: a gated repository (401 without the token), a connection
// dropped mid-file, a file whose bytes are not those its hash says, a slow line (to cancel mid-file).
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';

export interface HubFile {
  path: string;
  content: Buffer;
  /** Stored in LFS (large files: SHA-256 in the listing, redirect to the CDN). Default: .gguf, .onnx, .safetensors, *_data. */
  lfs?: boolean;
}

export interface HubRepo {
  files: HubFile[];
  /** Commit of main (40 hex). */
  commit?: string;
  /** Requests need `Authorization: Bearer <token>`. */
  token?: string;
  /** What the token guards: everything (a private repository, the default) or the files only (a
   * gated repository: its model card and listing are public, its files need accepted terms). */
  gate?: 'all' | 'files';
}

export interface HubFaults {
  /** Drop the connection once after this many bytes of a file's body (per path). */
  dropAfter?: Record<string, number>;
  /** Serve these paths with one byte flipped (the listing keeps the true hash). */
  corrupt?: string[];
  /** Bytes per second of file bodies (default unlimited). */
  rate?: number;
  /** Serve these paths without a Content-Length and with this many bytes more than the listing
   * says (a server that streams past the listed size). */
  overstream?: Record<string, number>;
}

export interface HubRequest {
  method: string;
  path: string;
  range?: string;
  authorization?: string;
}

export interface HubServer {
  url: string;
  /** The repositories served (a test may add one while the server runs). */
  repos: Record<string, HubRepo>;
  requests: HubRequest[];
  faults: HubFaults;
  /** Paths whose connection was dropped (dropAfter). */
  dropped: Set<string>;
  /** Body bytes sent per repository path (all requests). */
  sent: Map<string, number>;
  close(): Promise<void>;
}

const isLfs = (f: HubFile): boolean => f.lfs ?? /\.(gguf|onnx|safetensors)$|_data$/.test(f.path);
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const gitOid = (b: Buffer): string => createHash('sha1').update(`blob ${b.length}\0`).update(b).digest('hex');

export async function startHubServer(repos: Record<string, HubRepo>, faults: HubFaults = {}): Promise<HubServer> {
  const requests: HubRequest[] = [];
  const sent = new Map<string, number>();
  const dropped = new Set<string>();
  const sockets = new Set<Socket>();

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const repoOf = (parts: string[]): [string, HubRepo] | null => {
    const name = `${parts[0]}/${parts[1]}`;
    const r = repos[name];
    if (!r) return null;
    r.commit ??= createHash('sha1').update(name).digest('hex');
    return [name, r];
  };
  const authorized = (req: IncomingMessage, r: HubRepo): boolean => !r.token || req.headers.authorization === `Bearer ${r.token}`;
  const revOk = (r: HubRepo, rev: string): boolean => rev === 'main' || rev === 'HEAD' || rev === r.commit;

  async function sendBody(
    req: IncomingMessage,
    res: ServerResponse,
    key: string,
    body: Buffer,
    headers: Record<string, string>,
  ): Promise<void> {
    const extra = faults.overstream?.[key];
    if (extra !== undefined && req.method !== 'HEAD') {
      // No length, no ranges: the client learns the size only from the listing.
      res.writeHead(200, { ...headers });
      const more = Buffer.concat([body, Buffer.alloc(extra, 0x41)]);
      for (let at = 0; at < more.length; at += 64 * 1024) {
        if (res.destroyed) return;
        if (!res.write(more.subarray(at, at + 64 * 1024))) await new Promise((r) => res.once('drain', r));
        sent.set(key, (sent.get(key) ?? 0) + Math.min(64 * 1024, more.length - at));
      }
      return void res.end();
    }
    let start = 0;
    let end = body.length - 1;
    const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
    if (range) {
      start = range[1] ? Number(range[1]) : body.length - Number(range[2]);
      end = range[1] && range[2] ? Math.min(Number(range[2]), end) : end;
      res.writeHead(206, {
        ...headers,
        'Content-Length': String(end - start + 1),
        'Content-Range': `bytes ${start}-${end}/${body.length}`,
        'Accept-Ranges': 'bytes',
      });
    } else res.writeHead(200, { ...headers, 'Content-Length': String(body.length), 'Accept-Ranges': 'bytes' });
    if (req.method === 'HEAD') return void res.end();
    const drop = faults.dropAfter?.[key];
    const step = 16 * 1024;
    for (let at = start; at <= end; at += step) {
      const chunk = body.subarray(at, Math.min(at + step, end + 1));
      if (drop !== undefined && !dropped.has(key) && at + chunk.length > drop && at <= drop) {
        dropped.add(key);
        res.write(body.subarray(at, drop));
        sent.set(key, (sent.get(key) ?? 0) + Math.max(0, drop - at));
        res.socket?.destroy();
        return;
      }
      if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
      sent.set(key, (sent.get(key) ?? 0) + chunk.length);
      if (faults.rate) await new Promise((r) => setTimeout(r, (chunk.length / faults.rate!) * 1000));
      if (res.destroyed) return;
    }
    res.end();
  }

  const server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    requests.push({ method: req.method ?? '', path: u.pathname, range: req.headers.range, authorization: req.headers.authorization });
    const parts = u.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    void (async () => {
      // CDN: /cdn/<repo>/<sha256>/<path> (no auth: the hub signs its CDN links; here the path is the secret).
      if (parts[0] === 'cdn') {
        const found = repoOf(parts.slice(1, 3));
        const f = found?.[1].files.find((x) => x.path === parts.slice(4).join('/'));
        if (!found || !f) return json(res, 404, { error: 'not found' });
        let body = f.content;
        if (faults.corrupt?.includes(f.path)) {
          body = Buffer.from(body);
          body[Math.floor(body.length / 2)] ^= 0xff;
        }
        return sendBody(req, res, f.path, body, { ETag: `"${sha256(f.content)}"` });
      }
      if (parts[0] === 'api' && parts[1] === 'models') {
        const found = repoOf(parts.slice(2, 4));
        if (!found) return json(res, 404, { error: 'Repository not found' });
        const [name, r] = found;
        if (r.gate !== 'files' && !authorized(req, r)) return json(res, 401, { error: 'Invalid credentials in Authorization header' });
        const rest = parts.slice(4);
        if (rest.length === 0 || rest[0] === 'revision') {
          if (rest[0] === 'revision' && !revOk(r, rest[1])) return json(res, 404, { error: `Revision not found: ${rest[1]}` });
          return json(res, 200, {
            _id: name,
            id: name,
            sha: r.commit,
            private: !!r.token,
            gated: r.token ? 'manual' : false,
            siblings: r.files.map((f) => ({ rfilename: f.path })),
          });
        }
        if (rest[0] === 'tree') {
          if (!revOk(r, rest[1])) return json(res, 404, { error: `Revision not found: ${rest[1]}` });
          return json(
            res,
            200,
            r.files.map((f) =>
              isLfs(f)
                ? {
                    type: 'file',
                    path: f.path,
                    size: f.content.length,
                    oid: gitOid(Buffer.from(`oid sha256:${sha256(f.content)}`)),
                    lfs: { oid: sha256(f.content), size: f.content.length, pointerSize: 134 },
                  }
                : { type: 'file', path: f.path, size: f.content.length, oid: gitOid(f.content) },
            ),
          );
        }
        return json(res, 404, { error: 'not found' });
      }
      const found = repoOf(parts);
      if (found && parts[2] === 'resolve') {
        const [name, r] = found;
        if (!authorized(req, r)) return json(res, 401, { error: 'Invalid credentials' });
        if (!revOk(r, parts[3])) return json(res, 404, { error: 'Revision not found' });
        const path = parts.slice(4).join('/');
        const f = r.files.find((x) => x.path === path);
        if (!f) return json(res, 404, { error: 'Entry not found' }, { 'X-Error-Code': 'EntryNotFound' });
        const h = {
          'X-Repo-Commit': r.commit!,
          ...(isLfs(f) ? { 'X-Linked-Etag': `"${sha256(f.content)}"`, 'X-Linked-Size': String(f.content.length) } : {}),
        };
        if (isLfs(f)) {
          res.writeHead(302, { ...h, ETag: `"${sha256(f.content)}"`, Location: `/cdn/${name}/${sha256(f.content)}/${path}` });
          return void res.end();
        }
        return sendBody(req, res, f.path, f.content, { ...h, ETag: `"${gitOid(f.content)}"` });
      }
      json(res, 404, { error: 'not found' });
    })().catch(() => res.destroy());
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    repos,
    requests,
    faults,
    dropped,
    sent,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/** Deterministic pseudo-random bytes (a stand-in model file). */
export function bytes(n: number, seed = 1): Buffer {
  const b = Buffer.alloc(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    b[i] = x & 0xff;
  }
  return b;
}
