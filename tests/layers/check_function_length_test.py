#!/usr/bin/env python3
"""The function-length checker (scripts/check-function-length.py) on small sources whose answer is
known: a long function, a long flat table with and without its marker, lambdas inside a function,
braces inside strings, characters and comments, constructors with braced member initialisers,
member functions defined in a class and preprocessor branches.

Usage: check_function_length_test.py CHECKER
"""
import os
import subprocess
import sys
import tempfile
import unittest

CHECKER = None


def body(n, indent='    '):
    """n - 2 statement lines: with its braces, a body of n lines."""
    return ''.join(f'{indent}x += {k};\n' for k in range(n - 2))


def run(source, max_lines=100):
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, 'f.cpp'), 'w') as f:
            f.write(source)
        p = subprocess.run([sys.executable, CHECKER, '--max-lines', str(max_lines), '--root', root,
                            'f.cpp'], capture_output=True, text=True)
        return p.returncode, p.stdout.splitlines()


def long_message(line, name, length):
    return (f'f.cpp:{line}: function `{name}` is {length} lines long (limit 100; split it, or mark a '
            f'flat table with `// flat table: <why>` directly above it)')


class CheckFunctionLength(unittest.TestCase):
    def test_function_over_the_limit_fails_with_file_line_and_length(self):
        src = ('#include <vector>\n\nint f(int x)\n{\n' + body(101) + '    return x;\n}\n')
        # Body: `{` (line 4) + 99 statements + return + `}` = 102 lines.
        rc, out = run(src)
        self.assertEqual(rc, 1)
        self.assertEqual(out, [long_message(3, 'f', 102)])

    def test_function_at_the_limit_passes(self):
        rc, out = run('int f(int x) {\n' + body(100) + '}\n')
        self.assertEqual((rc, out), (0, []))
        rc, out = run('int f(int x) {\n' + body(101) + '}\n')
        self.assertEqual((rc, out), (1, [long_message(1, 'f', 101)]))

    def test_flat_table_with_its_marker_passes(self):
        table = 'KeyList keys()\n{\n    return {\n' + body(150, '        ') + '    };\n}\n'
        rc, out = run('// The keys, one a line.\n// flat table: one declaration per key\n' + table)
        self.assertEqual((rc, out), (0, []))
        rc, out = run(table)
        self.assertEqual((rc, out), (1, [long_message(1, 'keys', 152)]))

    def test_marker_needs_a_reason_and_its_place(self):
        table = 'KeyList keys()\n{\n' + body(150) + '}\n'
        rc, out = run('// flat table:\n' + table)
        self.assertEqual(rc, 1)
        self.assertEqual(out, ['f.cpp:1: `flat table:` marker without a reason'])
        # A blank line between the marker and the function: the marker excuses nothing.
        rc, out = run('// flat table: keys\n\n' + table)
        self.assertEqual(out, [long_message(3, 'keys', 150),
                               'f.cpp:1: `flat table:` marker is not directly above a function '
                               'definition'])
        # A marker inside a body (above a lambda) is not above a function definition either.
        rc, out = run('void f() {\n    // flat table: no\n    auto g = [] { return 1; };\n}\n')
        self.assertEqual(out, ['f.cpp:2: `flat table:` marker is not directly above a function '
                               'definition'])

    def test_lambdas_count_toward_their_function(self):
        lam = '    auto g = [&](int y) {\n' + body(60, '        ') + '        return y;\n    };\n'
        # 1 + 40 + 61 (the lambda) + 1 = 103 lines: the outer function, reported once.
        rc, out = run('void outer(int x)\n{\n' + body(42) + lam + '}\n')
        self.assertEqual((rc, out), (1, [long_message(1, 'outer', 103)]))
        # Short function holding a short lambda: nothing; a lambda at namespace scope is a function.
        rc, out = run('void outer(int x) {\n' + body(20) + '    auto g = [](int) { return 0; };\n}\n')
        self.assertEqual((rc, out), (0, []))
        rc, out = run('namespace {\nconst auto g = [](int x) {\n' + body(120) + '};\n}  // namespace\n')
        self.assertEqual((rc, out), (1, [long_message(2, 'lambda', 120)]))

    def test_braces_in_strings_characters_and_comments_are_not_code(self):
        noise = ('void noise(std::string& s)\n{\n'
                 '    s += "}}}{ \\" }";  // }}} {\n'
                 "    char c = '}'; char d = '\\''; char e = '{';\n"
                 '    /* { { { */ s += R"x(}}} )" {{{)x";\n'
                 '    s += u8R"(})";\n'
                 "    long n = 1'000; if (n) { n = 0x7f'ff; }\n"
                 '    // a comment ending in a brace {\n'
                 '}\n')
        rc, out = run(noise + '\nint after(int x)\n{\n' + body(110) + '    return x;\n}\n')
        self.assertEqual((rc, out), (1, [long_message(11, 'after', 111)]))

    def test_constructors_classes_and_preprocessor(self):
        src = ('namespace kef::detail {\n'                          # 1
               'class Model : public Base {\n'                      # 2
               'public:\n'                                          # 3
               '    Model(int n) : values_{1, 2}, n_(n), w_{n}\n'   # 4
               '    {\n' + body(110, '        ') + '    }\n'        # 5..114
               '    int small() const noexcept { return n_; }\n'    # 115
               'private:\n'
               '    std::vector<int> values_{};\n'
               '    int n_ = 0;\n'
               '};\n'
               '#if defined(KEF_X)\n'
               'void g() {\n'
               '#else\n'
               'void g(int) {\n'
               '#endif\n'
               + body(50) + '}\n'
               '#if 0\n'
               'void dead() {\n'
               '#else\n'
               'void live(std::vector<int> v = {1, 2}, F f = [](int) { return 0; }) {\n'
               '#endif\n'
               + body(103) + '}\n'
               'template <class T, class = std::enable_if_t<true>>\n'
               'auto h(T t) -> decltype(t + 1)\n'
               '{\n' + body(101) + '}\n'
               '}  // namespace kef::detail\n')
        rc, out = run(src)
        self.assertEqual(rc, 1)
        self.assertEqual(out, [long_message(4, 'Model', 110),
                               long_message(int(src[:src.index('void live')].count('\n')) + 1, 'live', 104),
                               long_message(int(src[:src.index('auto h')].count('\n')) + 1, 'h', 101)])

    def test_unbalanced_source_is_an_error_not_a_pass(self):
        rc, out = run('void f() {\n    int x = 0;\n')
        self.assertEqual(rc, 1)
        self.assertEqual(len(out), 1)
        self.assertIn('f.cpp: cannot be read as C++', out[0])


if __name__ == '__main__':
    CHECKER = sys.argv.pop(1)
    unittest.main()
