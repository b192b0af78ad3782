#!/usr/bin/env python3
"""Seeds of the `scenario` target (fuzz/seeds/scenario/): the scenarios both
packages' tests play (testdata/scenarios/*.json, their `sim.scenario`), and
mistakes of each kind koma-sim names (a bad step, a bad matcher, a regular
expression that does not compile, a finish that is not last, a method koma-sim
lacks, a number out of range, not JSON). Run from fuzz/: python3 seeds/make_scenario_seeds.py"""

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "scenario"
ROOT = HERE.parent.parent

seeds: dict[str, str] = {}
for f in sorted((ROOT / "testdata" / "scenarios").glob("*.json")):
    scenario = json.loads(f.read_text()).get("sim", {}).get("scenario")
    if scenario is not None:
        seeds[f"shared-{f.stem}"] = json.dumps(scenario, indent=1)

hand = {
    "empty": {},
    "one-output": {"turns": [{"steps": [{"do": "output", "text": "hi"}]}]},
    "bad-step": {"turns": [{"steps": [{"do": "explode"}]}]},
    "bad-regex": {"turns": [{"match": {"regex": "(["}, "steps": []}]},
    "finish-not-last": {"turns": [{"steps": [{"do": "finish", "status": "completed"}, {"do": "output", "text": "x"}]}]},
    "unknown-method": {"methods": [{"method": "no_such_method", "result": {}}]},
    "method-two-answers": {"methods": [{"method": "state", "result": {}, "error": {"code": "busy"}}]},
    "negative-times": {"turns": [{"times": -1, "steps": []}]},
    "crash-signal": {"turns": [{"steps": [{"do": "crash", "signal": "SIGKILL"}]}]},
    "approval-branches": {
        "turns": [
            {
                "steps": [
                    {
                        "do": "approval",
                        "tool": "t",
                        "allow": {"steps": [{"do": "output", "text": "a"}]},
                        "deny": {"steps": [{"do": "finish", "status": "failed"}]},
                    }
                ]
            }
        ]
    },
    "unknown-field": {"turns": [], "colour": "blue"},
    "wrong-type": {"turns": {"steps": []}},
    "deep": {"turns": [{"steps": [{"do": "event", "name": "x", "data": [[[[[[[[[[{}]]]]]]]]]]}]}]},
    "unicode": {"turns": [{"match": {"contains": "d\u00e9ploy \u202e"}, "steps": [{"do": "output", "text": "\u0000\u001b[31m"}]}]},
}
for name, value in hand.items():
    seeds[f"hand-{name}"] = json.dumps(value)
seeds["not-json"] = '{"turns": ['
# What the fuzzer found: a key holding DEL (or a C1 control) was quoted raw in the message.
seeds["found-del-in-a-key"] = '{"turns": [{"step\x7fs": [{"do": "output", "text": "x"}]}]}'
seeds["found-c1-in-a-key"] = '{"turns": [{"steps\u009b": []}]}'
seeds["found-del-in-a-method"] = '{"methods": [{"method": "n\x7f_such_method", "restlt": {}}]}'
seeds["not-utf8"] = '{"turns": [{"steps": [{"do": "output", "text": "\xff\xfe"}]}]}'

OUT.mkdir(exist_ok=True)
for old in OUT.iterdir():
    old.unlink()
for name, text in seeds.items():
    data = text.encode("latin-1") if name == "not-utf8" else text.encode()
    (OUT / name).write_bytes(data)
print(f"wrote {len(seeds)} seeds to {OUT}")
