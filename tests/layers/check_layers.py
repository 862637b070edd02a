#!/usr/bin/env python3
"""Fails when a file of libkef includes a header of a layer above its own.

The layers, lowest first, are the KEF_LAYERS list of framework/CMakeLists.txt: a file in
framework/<layer>/ may include headers of its own layer and of the layers before it, and standard or
third-party headers; framework/mpi (the MPI communicator of the command and the Python module) and
framework/cli (the kef command, which may also include mpi's header), above every layer, with their
own private headers, may include any layer. A header is found by its file name in the
layers' include/kef and src folders; a name that two layers both define is an error too, since the
build could not tell them apart.

The installed surface (docs/design.md, "The public surface"): a public header (a layer's include/
folder) of an installed layer (KEF_PUBLIC_LAYERS) may include only other installed headers, or the
installed tree would not compile; and the code built as a plugin author or embedder builds (every
plugin in plugins/, the SDK's examples, the Python module) may include only installed headers, the
SDK's own headers (sdk/include) and files in its own folder (the Python module also framework/mpi's
header, which it links as a static library). A header becomes public by moving it into include/,
never by a plugin reaching into src/.

Usage: check_layers.py SOURCE_DIR  (prints every violation with file:line, exits 1 if any)
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# The folders above every layer, lowest first.
ABOVE = ['mpi', 'cli']


def cmake_list(source_dir, name):
    text = open(os.path.join(source_dir, 'framework', 'CMakeLists.txt')).read()
    m = re.search(r'set\(' + name + r' ([a-z_ ]+)\)', text)
    if not m:
        sys.exit(f'check_layers: no `set({name} ...)` in framework/CMakeLists.txt')
    return m.group(1).split()


def layers_of(source_dir):
    return cmake_list(source_dir, 'KEF_LAYERS')


def quoted_includes(path):
    """(line number, included name) of each #include "..." in a source file."""
    with open(path, encoding='utf-8') as f:
        for lineno, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield lineno, m.group(1)


def sources_under(folder):
    for dirpath, _, names in os.walk(folder):
        for name in sorted(names):
            if name.endswith(('.hpp', '.h', '.cpp')):
                yield os.path.join(dirpath, name)


def check_surface(source_dir, header_layer, public_keys, problems):
    """The installed headers include only installed headers; plugins, the SDK's examples and the
    Python module include only installed headers, the SDK's headers and their own files."""
    framework = os.path.join(source_dir, 'framework')
    public_layers = set(cmake_list(source_dir, 'KEF_PUBLIC_LAYERS'))
    installed = {key for key, layer in public_keys.items() if layer in public_layers}
    sdk_include = os.path.join(source_dir, 'sdk', 'include')
    for dirpath, _, names in os.walk(sdk_include):
        for name in names:
            installed.add(os.path.relpath(os.path.join(dirpath, name), sdk_include).replace(os.sep, '/'))
    for layer in public_layers:
        for path in sources_under(os.path.join(framework, layer)):
            if 'include' not in os.path.relpath(path, framework).split(os.sep):
                continue
            for lineno, target in quoted_includes(path):
                if target in header_layer and target not in installed:
                    problems.append(f'{os.path.relpath(path, source_dir)}:{lineno}: the installed header includes '
                                    f'"{target}", which is not installed (private to `{header_layer[target]}`)')
    # Each consumer: its root folder, and the extra folders whose headers it may include.
    consumers = []
    plugins = os.path.join(source_dir, 'plugins')
    if os.path.isdir(plugins):
        for name in sorted(os.listdir(plugins)):
            if os.path.isdir(os.path.join(plugins, name)):
                consumers.append((f'plugin `{name}`', os.path.join(plugins, name), []))
    examples = os.path.join(source_dir, 'sdk', 'examples')
    if os.path.isdir(examples):
        for name in sorted(os.listdir(examples)):
            if os.path.isdir(os.path.join(examples, name)):
                consumers.append((f'SDK example `{name}`', os.path.join(examples, name), []))
    python = os.path.join(source_dir, 'python', 'src')
    if os.path.isdir(python):
        consumers.append(('the Python module', python, [os.path.join(framework, 'mpi')]))
    for what, root, extra in consumers:
        for path in sources_under(root):
            for lineno, target in quoted_includes(path):
                if target in installed:
                    continue
                if any(os.path.isfile(os.path.join(d, target)) for d in [os.path.dirname(path), root] + extra):
                    continue
                where = (f'private to `{header_layer[target]}`' if target in header_layer
                         else 'neither installed nor in its folder')
                problems.append(f'{os.path.relpath(path, source_dir)}:{lineno}: {what} includes "{target}", '
                                f'which is {where}')


def main():
    source_dir = sys.argv[1] if len(sys.argv) > 1 else '.'
    framework = os.path.join(source_dir, 'framework')
    layers = layers_of(source_dir)
    rank = {layer: i for i, layer in enumerate(layers)}
    header_layer, public_keys, problems, files = {}, {}, [], []
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
                        public_keys[key] = layer
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
    check_surface(source_dir, header_layer, public_keys, problems)
    for p in problems:
        print(p)
    print(f'check_layers: {len(files)} files, {checked} includes, {len(problems)} problems '
          f'(layers, lowest first: {" < ".join(layers)})')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
