#!/usr/bin/env python3
"""expect_status.py STATUS [--output-has TEXT] COMMAND...: runs COMMAND and passes only when it exits with
STATUS and, with --output-has, its output (stdout and stderr) contains TEXT: a checker that must refuse
something refuses it for the reason it should, not by crashing or for another."""
import subprocess
import sys

want = int(sys.argv[1])
args = sys.argv[2:]
expect_text = None
if args[:1] == ["--output-has"]:
    expect_text, args = args[1], args[2:]
run = subprocess.run(args, capture_output=True, text=True)
output = run.stdout + run.stderr
print(output)
if run.returncode != want:
    sys.exit("expect_status: `" + " ".join(args) + "` exited " + str(run.returncode) + ", expected " + str(want))
if expect_text is not None and expect_text not in output:
    sys.exit("expect_status: the output does not contain '" + expect_text + "'")
