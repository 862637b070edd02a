#!/usr/bin/env python3
"""A stand-in for `kef plugins --json` / `--describe` that the docs tests give gen_components.py, to see
that the generator refuses what it must: FAKE_KEF_CASE=undocumented lists a key with no description;
FAKE_KEF_CASE=differs describes a key with another default than the listing gives;
FAKE_KEF_CASE=unlisted lists a component in `kef plugins` that the JSON listing leaves out."""
import json
import os
import sys

case = os.environ.get("FAKE_KEF_CASE", "")
key = {"name": "sigma", "kind": "a number", "default": "1", "required": False, "range": "> 0", "choices": "",
       "doc": "" if case == "undocumented" else "bandwidth"}
component = {"interface": "kernel", "type": "fake", "plugin": "fake", "summary": "a fake kernel", "reference": "",
             "parts": [], "facets": "", "facets_role": "models have", "keys": [key]}
if sys.argv[1:] == ["plugins", "--json"]:
    print(json.dumps({"kef_version": "0", "plugins": [], "components": [component]}))
elif sys.argv[1:] == ["plugins", "--describe", "kernel/fake"]:
    default = "2" if case == "differs" else "1"
    print("kernel/fake  (plugin fake)\n  a fake kernel\n  sigma (a number, default " + default +
          ") range > 0\n      bandwidth")
elif sys.argv[1:] == ["plugins"]:
    print("plugins:\n  fake 0 [loaded] fake.so\ncomponents:\n  kernel/fake  a fake kernel" +
          ("\n  kernel/hidden  a kernel --json leaves out" if case == "unlisted" else ""))
else:
    sys.exit("fake_kef: unexpected arguments " + " ".join(sys.argv[1:]))
