// The design options every command shares (-f, -I, -D, -G, --top), parsed the same way.
export const DESIGN_OPTIONS = {
  top: { type: 'string' },
  filelist: { type: 'string', short: 'f', multiple: true },
  include: { type: 'string', short: 'I', multiple: true },
  define: { type: 'string', short: 'D', multiple: true },
  param: { type: 'string', short: 'G', multiple: true },
} as const;

export const DESIGN_HELP = `Design:
  --top <module>        DUT top module (needed when the files hold several top candidates)
  -f <files.f>          EDA file list (+incdir+, +define+, -v, nested -f); repeatable
  -I <dir>              include directory; repeatable
  -D <NAME[=VALUE]>     define; repeatable
  -G <NAME=VALUE>       DUT top parameter override; repeatable
`;
