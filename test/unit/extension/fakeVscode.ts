// A small stand-in for the `vscode` module, for unit tests of the adapters only (vi.mock('vscode')).
// It implements just what the adapters under test touch; the real API is exercised end to end in
// test/e2e against code-server.
export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}
export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: number | Position, b: number | Position, c?: number, d?: number) {
    this.start = typeof a === 'number' ? new Position(a, b as number) : a;
    this.end = typeof a === 'number' ? new Position(c!, d!) : (b as Position);
  }
}
export enum DiagnosticSeverity {
  Error = 0,
  Warning = 1,
  Information = 2,
  Hint = 3,
}
export class Diagnostic {
  source?: string;
  code?: string | number;
  constructor(
    readonly range: Range,
    readonly message: string,
    readonly severity: DiagnosticSeverity,
  ) {}
}
export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
  ) {}
  get fsPath(): string {
    return this.path;
  }
  static file(p: string): Uri {
    return new Uri('file', p);
  }
  static from(o: { scheme: string; path: string }): Uri {
    return new Uri(o.scheme, o.path);
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, [base.path, ...parts].join('/'));
  }
  toString(): string {
    return `${this.scheme}://${this.path}`;
  }
}

export const settings = new Map<string, unknown>();
export const shown: string[] = [];

export const workspace = {
  isTrusted: true,
  getConfiguration: (section: string) => ({
    get: <T>(key: string, def?: T): T => (settings.has(`${section}.${key}`) ? (settings.get(`${section}.${key}`) as T) : (def as T)),
    update: async (key: string, value: unknown) => void settings.set(`${section}.${key}`, value),
  }),
  getWorkspaceFolder: (_u: Uri) => undefined,
};

export const ConfigurationTarget = { Global: 1, Workspace: 2, WorkspaceFolder: 3 } as const;

export const window = {
  showInformationMessage: async (m: string) => void shown.push(m),
  showWarningMessage: async (m: string) => void shown.push(m),
  showErrorMessage: async (m: string) => void shown.push(m),
};

export class SecretStore {
  private m = new Map<string, string>();
  async get(k: string): Promise<string | undefined> {
    return this.m.get(k);
  }
  async store(k: string, v: string): Promise<void> {
    this.m.set(k, v);
  }
  async delete(k: string): Promise<void> {
    this.m.delete(k);
  }
}
