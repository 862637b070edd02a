#!/usr/bin/env python3
"""Fails when a file of libkef includes a header of a layer above its own.

The layers, lowest first, are the KEF_LAYERS list of framework/CMakeLists.txt: a file in
framework/<layer>/ may include headers of its own layer and of the layers before it, and standard or
third-party headers; framework/mpi (the MPI communicator of the command and the Python module) and
framework/cli (the kef command, which may also include mpi's header), above every layer, with their
own private headers, may include any layer. A header is found by its file name in the
layers' include/kef and src folders; a name that two layers both define is an error too, since the
build could not tell them apart.

Usage: check_layers.py SOURCE_DIR  (prints every violation with file:line, exits 1 if any)
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# The folders above every layer, lowest first.
ABOVE = ['mpi', 'cli']


def layers_of(source_dir):
    text = open(os.path.join(source_dir, 'framework', 'CMakeLists.txt')).read()
    m = re.search(r'set\(KEF_LAYERS ([a-z_ ]+)\)', text)
    if not m:
        sys.exit('check_layers: no `set(KEF_LAYERS ...)` in framework/CMakeLists.txt')
    return m.group(1).split()


def main():
    source_dir = sys.argv[1] if len(sys.argv) > 1 else '.'
    framework = os.path.join(source_dir, 'framework')
    layers = layers_of(source_dir)
    rank = {layer: i for i, layer in enumerate(layers)}
    header_layer, problems, files = {}, [], []
    for layer in layers:
        for dirpath, _, names in os.walk(os.path.join(framework, layer)):
            for name in sorted(names):
                path = os.path.join(dirpath, name)
                files.append((layer, path))
                if name.endswith(('.hpp', '.h')):
                    rel = os.path.relpath(path, framework)
                    parts = rel.split(os.sep)
                    # kef/x.hpp (public) or x.hpp (private, in src/): keyed as it is included.
                    if 'include' in parts:
                        key = '/'.join(parts[parts.index('include') + 1:])
                    else:
                        key = '/'.join(parts[parts.index('src') + 1:])
                    if key in header_layer and header_layer[key] != layer:
                        problems.append(f'{rel}: header `{key}` is defined in both {header_layer[key]} and {layer}')
                    header_layer[key] = layer
    # Above libkef: framework/mpi (the MPI communicator, linked into the command and the Python
    # module) and framework/cli (the command, which may include mpi's header too).
    for above in ABOVE:
        rank[above] = len(rank)
        for dirpath, _, names in os.walk(os.path.join(framework, above)):
            for name in sorted(names):
                files.append((above, os.path.join(dirpath, name)))
                if name.endswith(('.hpp', '.h')):
                    if name in header_layer:
                        problems.append(f'framework/{above}/{name}: header `{name}` is defined in both '
                                        f'{header_layer[name]} and {above}')
                    header_layer[name] = above
    checked = 0
    for layer, path in files:
        if not path.endswith(('.hpp', '.h', '.cpp')):
            continue
        with open(path, encoding='utf-8') as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                checked += 1
                target = m.group(1)
                target_layer = header_layer.get(target)
                if target_layer is None:
                    problems.append(f'{os.path.relpath(path, source_dir)}:{lineno}: includes "{target}", '
                                    'which no layer defines')
                    continue
                if layer in ABOVE and target_layer not in ABOVE:
                    continue
                if rank[target_layer] > rank[layer]:
                    problems.append(f'{os.path.relpath(path, source_dir)}:{lineno}: layer `{layer}` includes '
                                    f'"{target}" of the higher layer `{target_layer}`')
    for p in problems:
        print(p)
    print(f'check_layers: {len(files)} files, {checked} includes, {len(problems)} problems '
          f'(layers, lowest first: {" < ".join(layers)})')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
