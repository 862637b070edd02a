#!/usr/bin/env python3
"""Fails when a C++ function body is longer than a limit (100 lines by default).

A function's length is the number of lines from the line of its body's opening brace to the line of
its closing brace, both included (as clang-tidy's readability-function-size counts them). Everything
inside a body (lambdas, local classes, nested blocks) belongs to that function and is not counted on
its own; member functions defined inside a class body and lambdas assigned at namespace scope are
functions of their own.

A function that is a flat table (a list of declarations, keys or cases that reads as one table and
would only be harder to read split) is exempt when the comment block directly above its first line
holds `flat table: <why>`; the reason is required, and a marker that is not directly above a function
definition is an error too, so that a marker cannot drift away from what it excuses.

The source is read by a small lexer, not by a compiler: comments, string literals (raw strings
included), character literals and digit separators are skipped, preprocessor lines are ignored, and
of `#if ... #elif/#else ... #endif` only the first branch is read (the branch after `#if 0`), so that
each brace is seen once.

Usage: check-function-length.py [--max-lines N] [--root DIR] PATH...
  PATH is a file or a directory (searched for C++ sources), relative to --root (default: the current
  directory). Prints `file:line: function `name` is N lines long (limit M)` for each function over the
  limit and exits 1 if there is any; exits 0 otherwise.
"""
import argparse
import bisect
import os
import re
import sys

SOURCE_SUFFIXES = ('.cpp', '.cc', '.cxx', '.hpp', '.h', '.hh', '.hxx', '.ipp', '.inl', '.tpp')
MARKER = re.compile(r'flat table:(.*)')
IDENT_CHARS = re.compile(r'[A-Za-z0-9_]')


class Lexed:
    """The code of a file with comments, literals and preprocessor lines blanked (newlines kept, so
    that offsets map to the same lines), plus each line's comment text and whether the line holds a
    comment but no code."""

    def __init__(self, code, comments):
        self.code = code
        self.comments = comments  # line number (1-based) -> comment text on that line
        self.line_starts = [0] + [i + 1 for i, c in enumerate(code) if c == '\n']
        code_lines = code.split('\n')
        self.has_code = [False] + [bool(line.strip()) for line in code_lines]

    def line_of(self, offset):
        return bisect.bisect_right(self.line_starts, offset)


def lex(src):
    """Blanks comments, string and character literals and preprocessor directives of C++ source."""
    out = []
    comments = {}
    line = 1
    i, n = 0, len(src)
    at_line_start = True  # only whitespace so far on this line (for preprocessor directives)
    # One entry per open #if: [its current branch is read, one of its branches was read].
    branches = []

    def note_comment(start_line, text):
        for k, piece in enumerate(text.split('\n')):
            comments[start_line + k] = comments.get(start_line + k, '') + piece

    def blank(text):
        out.append(re.sub(r'[^\n]', ' ', text))

    while i < n:
        c = src[i]
        skipped = not all(b[0] for b in branches)
        if c == '\n':
            out.append(c)
            line += 1
            i += 1
            at_line_start = True
            continue
        if at_line_start and c == '#':
            # A directive runs to the end of the line, continued by a trailing backslash; comments
            # inside it are comments all the same.
            j = i
            while True:
                k = src.find('\n', j)
                if k < 0:
                    k = n
                    break
                if src[k - 1] == '\\' or (src[k - 1] == '\r' and src[k - 2] == '\\'):
                    j = k + 1
                    continue
                break
            directive = src[i:k]
            word = re.match(r'#\s*(\w*)\s*(.*)', directive, re.S)
            name, rest = word.group(1), word.group(2).strip()
            if name in ('if', 'ifdef', 'ifndef'):
                # `#if 0` is dead code, its next branch is read; otherwise the first branch is read.
                dead = name == 'if' and re.match(r'0\b', rest) is not None
                branches.append([not dead, not dead])  # [reading this branch, a branch was read]
            elif name in ('elif', 'else', 'elifdef', 'elifndef') and branches:
                branches[-1][0] = not branches[-1][1]
                branches[-1][1] = True
            elif name == 'endif' and branches:
                branches.pop()
            blank(directive)
            line += directive.count('\n')
            i = k
            continue
        if src.startswith('//', i):
            j = i
            while True:
                k = src.find('\n', j)
                if k < 0:
                    k = n
                    break
                if src[k - 1] == '\\':
                    j = k + 1
                    continue
                break
            note_comment(line, src[i + 2:k])
            blank(src[i:k])
            line += src.count('\n', i, k)
            i = k
            continue
        if src.startswith('/*', i):
            k = src.find('*/', i + 2)
            k = n if k < 0 else k + 2
            note_comment(line, src[i + 2:k - 2])
            blank(src[i:k])
            line += src.count('\n', i, k)
            i = k
            at_line_start = False
            continue
        at_line_start = at_line_start and c in ' \t\r\f\v'
        if skipped:
            blank(c)
            i += 1
            continue
        raw = re.compile(r'(?:u8|u|U|L)?R"([^()\\\s]{0,16})\(').match(src, i)
        if raw and (i == 0 or not IDENT_CHARS.match(src[i - 1])):
            end = ')' + raw.group(1) + '"'
            k = src.find(end, raw.end())
            k = n if k < 0 else k + len(end)
            out.append('""')
            blank(src[i + 2:k])
            line += src.count('\n', i, k)
            i = k
            continue
        if c == '"' or (c == "'" and not _is_digit_separator(src, i)):
            k = i + 1
            while k < n and src[k] != c and src[k] != '\n':
                k += 2 if src[k] == '\\' else 1
            k = min(k + 1, n)
            out.append(c + c)
            blank(src[i + 2:k])
            i = k
            continue
        out.append(c)
        i += 1
    return Lexed(''.join(out), comments)


def _is_digit_separator(src, i):
    """True when the quote at i separates digits of a number (1'000'000, 0x7f'ff) rather than
    opening a character literal."""
    j = i
    while j > 0 and (IDENT_CHARS.match(src[j - 1]) or src[j - 1] in ".'"):
        j -= 1
    token = src[j:i]
    return bool(token) and token[0].isdigit()


# Qualifiers that may follow a function's parameter list before its body, a trailing return type, a
# requires-clause or a constructor's member initialiser list.
QUALIFIERS = re.compile(r'\s*(?:(?:const|volatile|noexcept|override|final|mutable|try|constexpr|'
                        r'consteval)\b|&&|&|throw\s*\(\s*\))')
ACCESS = re.compile(r'\s*(?:(?:public|private|protected)\s*:(?!:)\s*)*')


def _close_paren(text, i):
    """Index just past the parenthesis group opening at text[i], or -1 when it does not close."""
    depth = 0
    for k in range(i, len(text)):
        if text[k] == '(':
            depth += 1
        elif text[k] == ')':
            depth -= 1
            if depth == 0:
                return k + 1
    return -1


def _after_qualifiers(text, k):
    """The offset after the qualifiers (noexcept's condition included) starting at text[k], or -1
    when a noexcept condition does not close."""
    while True:
        m = QUALIFIERS.match(text, k)
        if not m:
            return k
        k = m.end()
        if m.group().strip() == 'noexcept':
            rest = text[k:].lstrip()
            if rest.startswith('('):
                k = _close_paren(text, len(text) - len(rest))
                if k < 0:
                    return -1


def _strip_template_prefix(h):
    """The declaration after leading `template <...>` headers (nested angle brackets balanced)."""
    while True:
        m = re.match(r'\s*template\s*<', h)
        if not m:
            return h
        depth, k = 1, m.end()
        while k < len(h) and depth:
            depth += {'<': 1, '>': -1}.get(h[k], 0)
            k += 1
        h = h[k:]


def function_name(head):
    """The name and its offset in head when head is a function definition's declarator, else None.

    A function is a name (or `operator...`, or a lambda's `]`) followed by a parameter list, then
    only qualifiers before the end, a trailing return type, a requires-clause or a constructor's
    member initialiser list."""
    h = head
    for m in re.finditer(r'\(', h):
        i = m.start()
        before = h[:i].rstrip()
        if not before or _paren_depth(h[:i]) != 0:
            continue
        if re.search(r'\boperator\s*$', before):
            continue  # operator(): the first group is the operator's name
        if not (IDENT_CHARS.match(before[-1]) or before[-1] in '>]'):
            continue
        if re.search(r'\b(?:decltype|alignas|noexcept|sizeof|alignof|__attribute__|requires)$', before):
            continue
        end = _close_paren(h, i)
        if end < 0:
            return None
        k = _after_qualifiers(h, end)
        if k < 0:
            return None
        rest = h[k:].strip()
        # A member initialiser list is complete when it ends with `)` or `}`; before that, a
        # brace opens one of its braced initialisers.
        ctor = re.match(r':(?!:)', rest) and h.rstrip()[-1] in ')}'
        if rest == '' or rest.startswith('->') or re.match(r'requires\b', rest) or ctor:
            name = re.search(r'((?:[\w~]+\s*(?:<[^()]*?>)?\s*::\s*)*(?:operator\s*(?:\(\s*\)|[^\s\w(]+|\w[\w\s:]*)|~?\w+|\]))$',
                             before)
            if not name:
                return None
            text = name.group(1)
            text = 'lambda' if text == ']' else re.sub(r'\s+', ' ', text)
            return text, name.start(1)
    # A lambda without a parameter list: `[captures] mutable {`, not an array `a[3] {`.
    m = re.search(r'(?:^|[=(,{]|\breturn)\s*\[[^\[\]]*\]\s*(?:mutable|constexpr|noexcept)?\s*$', h)
    if m:
        return 'lambda', h.rfind('[')
    return None


def _paren_depth(text):
    return text.count('(') - text.count(')')


def _match_brace(code, i):
    depth = 0
    for m in re.finditer(r'[{}]', code[i:]):
        depth += 1 if m.group() == '{' else -1
        if depth == 0:
            return i + m.start()
    return -1


class ParseError(Exception):
    pass


def find_functions(lexed):
    """Every function definition not nested in another: (name, name line, signature's first line,
    body's first line, body's last line)."""
    code = lexed.code
    found = []
    head_start, i, scopes = 0, 0, 0
    token = re.compile(r'[{};]')
    while True:
        m = token.search(code, i)
        if not m:
            break
        p = m.start()
        if m.group() == ';':
            head_start = i = p + 1
            continue
        if m.group() == '}':
            if scopes == 0:
                raise ParseError(f'line {lexed.line_of(p)}: unmatched closing brace')
            scopes -= 1
            head_start = i = p + 1
            continue
        head = code[head_start:p]
        access = ACCESS.match(head)
        decl_start = head_start + access.end()
        decl = _strip_template_prefix(head[access.end():])
        decl_offset = p - len(decl)
        bare = decl.strip()
        if _paren_depth(head) > 0:
            # A brace inside a declaration's parentheses: a default argument, a macro's argument.
            kind = None
        elif re.match(r'(?:inline\s+)?namespace\b', bare) or re.fullmatch(r'extern\s*""', bare):
            kind = 'scope'
        elif re.match(r'(?:typedef\s+)?(?:class|struct|union)\b', bare) and not function_name(decl):
            kind = 'scope'
        elif re.match(r'enum\b', bare):
            kind = None
        else:
            kind = function_name(decl)
        if kind == 'scope':
            scopes += 1
            head_start = i = p + 1
            continue
        close = _match_brace(code, p)
        if close < 0:
            raise ParseError(f'line {lexed.line_of(p)}: opening brace never closed')
        if kind is None:
            i = close + 1  # an initialiser: part of the declaration that goes on
            continue
        name, offset = kind
        sig = decl_start + (len(head[access.end():]) - len(head[access.end():].lstrip()))
        found.append((name, lexed.line_of(decl_offset + offset), lexed.line_of(sig),
                      lexed.line_of(p), lexed.line_of(close)))
        head_start = i = close + 1
    if scopes:
        raise ParseError('a namespace or class is never closed')
    return found


def comment_block_above(lexed, line):
    """Line numbers of the comment-only lines directly above `line`, nearest first."""
    block = []
    k = line - 1
    while k >= 1 and not lexed.has_code[k] and k in lexed.comments:
        block.append(k)
        k -= 1
    return block


def check_file(path, shown, max_lines):
    with open(path, encoding='utf-8', errors='replace') as f:
        lexed = lex(f.read())
    problems = []
    try:
        functions = find_functions(lexed)
    except ParseError as e:
        return [f'{shown}: cannot be read as C++ ({e})']
    markers = {k: MARKER.match(text.strip()) for k, text in lexed.comments.items()}
    markers = {k: m for k, m in markers.items() if m}
    used = set()
    for name, name_line, sig_line, first, last in functions:
        marked = [k for k in comment_block_above(lexed, sig_line) if k in markers]
        used.update(marked)
        length = last - first + 1
        if length > max_lines and not marked:
            problems.append(f'{shown}:{name_line}: function `{name}` is {length} lines long '
                            f'(limit {max_lines}; split it, or mark a flat table with '
                            f'`// flat table: <why>` directly above it)')
    for k in sorted(markers):
        if not markers[k].group(1).strip():
            problems.append(f'{shown}:{k}: `flat table:` marker without a reason')
        elif k not in used:
            problems.append(f'{shown}:{k}: `flat table:` marker is not directly above a function '
                            f'definition')
    return problems


def sources(root, paths):
    for rel in paths:
        path = os.path.join(root, rel)
        if os.path.isfile(path):
            yield path
        elif os.path.isdir(path):
            for dirpath, dirnames, names in os.walk(path):
                dirnames.sort()
                for name in sorted(names):
                    if name.endswith(SOURCE_SUFFIXES):
                        yield os.path.join(dirpath, name)
        else:
            sys.exit(f'check-function-length: no such file or directory: {path}')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--max-lines', type=int, default=100)
    parser.add_argument('--root', default='.')
    parser.add_argument('paths', nargs='+')
    args = parser.parse_args()
    problems, count = [], 0
    for path in sources(args.root, args.paths):
        count += 1
        problems += check_file(path, os.path.relpath(path, args.root), args.max_lines)
    for p in problems:
        print(p)
    if problems:
        print(f'check-function-length: {len(problems)} problem(s) in {count} files', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
