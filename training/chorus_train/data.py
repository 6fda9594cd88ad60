"""CodeV-R1 record filtering (docs/protocol.md §8 "Data"), on a local copy of the dataset.

    chorus-train data codev_r1.jsonl --out data/codev_r1_filtered.jsonl --eval-dir suites/verilog-eval [--service URL]

Kept: records whose RTL (`ground_truth`) has MORE than 1,000 Qwen3 tokens and exactly one
candidate top module, where the top candidates come from the TypeScript engine (the reward
service's `/v1/introspect`, the same Verilator front end as everything else — no regexes here);
then exact deduplication (RTL with comments and whitespace normalized) and a contamination check
against evaluation suites (near-duplicates: Jaccard similarity of token 5-gram shingles >= 0.8
with any suite file). Output: one task per line, {id, problem_id, question, design_files, top},
ready for `chorus-train rl`; a report (counts per reason) next to it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

MIN_TOKENS = 1000
NEAR_DUP = 0.8
SHINGLE = 5
EVAL_SUFFIXES = ('.sv', '.v', '.svh', '.vh')

_COMMENT = re.compile(r'//[^\n]*|/\*.*?\*/', re.S)
_TOKEN = re.compile(r'[A-Za-z_][A-Za-z0-9_$]*|\d+|\S')


def normalize(code: str) -> str:
    """Comments removed, whitespace collapsed: the dedup key."""
    return ' '.join(_COMMENT.sub(' ', code).split())


def shingles(code: str, n: int = SHINGLE) -> set[int]:
    toks = _TOKEN.findall(_COMMENT.sub(' ', code))
    if len(toks) < n:
        return {hash(tuple(toks))}
    return {hash(tuple(toks[i : i + n])) for i in range(len(toks) - n + 1)}


def jaccard(a: set[int], b: set[int]) -> float:
    return len(a & b) / max(1, len(a | b))


def load_records(path: Path) -> list[dict]:
    if path.suffix == '.parquet':
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    text = path.read_text()
    if path.suffix == '.json':
        data = json.loads(text)
        return data if isinstance(data, list) else data['data']
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def qwen3_token_counter(tokenizer_json: Path | None = None) -> Callable[[str], int]:
    from tokenizers import Tokenizer

    from .tiny_model import DEFAULT_TOKENIZER

    tok = Tokenizer.from_file(str(tokenizer_json or DEFAULT_TOKENIZER / 'tokenizer.json'))
    return lambda s: len(tok.encode(s, add_special_tokens=False).ids)


def service_top_detector(client) -> Callable[[list[dict]], list[str]]:
    """Top candidates from the TypeScript engine through the reward service (`POST /v1/introspect
    {design_files}` -> `{top_candidates}`)."""
    return lambda files: list(client.introspect(files)['top_candidates'])


@dataclass
class Report:
    total: int = 0
    kept: int = 0
    dropped: dict = field(
        default_factory=lambda: {'short': 0, 'no_rtl': 0, 'top_count': 0, 'design_error': 0, 'duplicate': 0, 'contaminated': 0}
    )


def filter_records(
    records: Iterable[dict],
    count_tokens: Callable[[str], int],
    detect_tops: Callable[[list[dict]], list[str]],
    eval_files: dict[str, str] | None = None,
    min_tokens: int = MIN_TOKENS,
    near_dup: float = NEAR_DUP,
    rtl_field: str = 'ground_truth',
) -> tuple[list[dict], Report, list[dict]]:
    """(tasks, report, dropped [{problem_id, reason, detail}])."""
    rep = Report()
    evals = {name: shingles(src) for name, src in (eval_files or {}).items()}
    seen: set[str] = set()
    out, dropped = [], []

    def drop(rec, reason, detail=''):
        rep.dropped[reason] += 1
        dropped.append({'problem_id': rec.get('problem_id'), 'reason': reason, 'detail': detail})

    for i, rec in enumerate(records):
        rep.total += 1
        rtl = rec.get(rtl_field)
        if isinstance(rtl, dict):  # some dumps nest the code
            rtl = rtl.get('code') or rtl.get('answer')
        if not isinstance(rtl, str) or not rtl.strip():
            drop(rec, 'no_rtl')
            continue
        n = count_tokens(rtl)
        if n <= min_tokens:
            drop(rec, 'short', f'{n} tokens')
            continue
        key = hashlib.sha256(normalize(rtl).encode()).hexdigest()
        if key in seen:
            drop(rec, 'duplicate')
            continue
        files = [{'name': 'design.sv', 'content': rtl}]
        try:
            tops = detect_tops(files)
        except Exception as e:  # a design the engine cannot read
            drop(rec, 'design_error', str(e)[:200])
            continue
        if len(tops) != 1:
            drop(rec, 'top_count', ','.join(tops))
            continue
        sh = shingles(rtl)
        hit = next(((name, s) for name, es in evals.items() if (s := jaccard(sh, es)) >= near_dup), None)
        if hit:
            drop(rec, 'contaminated', f'{hit[0]} jaccard {hit[1]:.2f}')
            continue
        seen.add(key)
        top = tops[0]
        out.append(
            {
                'id': str(rec.get('problem_id', i)),
                'problem_id': rec.get('problem_id'),
                'question': rec.get('question'),
                'design_files': [{'name': f'{top}.sv', 'content': rtl}],
                'top': top,
                'rtl_tokens': n,
            }
        )
        rep.kept += 1
    return out, rep, dropped


def read_eval_dirs(dirs: list[Path]) -> dict[str, str]:
    files = {}
    for d in dirs:
        for p in sorted(Path(d).rglob('*')):
            if p.is_file() and p.suffix in EVAL_SUFFIXES:
                files[str(p)] = p.read_text(errors='replace')
    return files


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog='chorus-train data', description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('input', type=Path, help='local CodeV-R1 copy: .jsonl, .json or .parquet')
    ap.add_argument('--out', type=Path, required=True)
    ap.add_argument(
        '--eval-dir', type=Path, action='append', default=[], help='evaluation suite folder (repeat): near-duplicates are removed'
    )
    ap.add_argument('--service', action='append', default=None, help='reward service URL(s); default: start one')
    ap.add_argument('--min-tokens', type=int, default=MIN_TOKENS)
    ap.add_argument('--near-dup', type=float, default=NEAR_DUP)
    a = ap.parse_args(argv)
    from .reward_client import connect

    records = load_records(a.input)
    with connect(a.service) as client:
        tasks, rep, dropped = filter_records(
            records, qwen3_token_counter(), service_top_detector(client), read_eval_dirs(a.eval_dir), a.min_tokens, a.near_dup
        )
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(''.join(json.dumps(t) + '\n' for t in tasks))
    report = {'input': str(a.input), 'total': rep.total, 'kept': rep.kept, 'dropped': rep.dropped, 'dropped_records': dropped}
    a.out.with_suffix('.report.json').write_text(json.dumps(report, indent=2) + '\n')
    print(json.dumps({k: report[k] for k in ('total', 'kept', 'dropped')}))


if __name__ == '__main__':
    main(sys.argv[1:])
