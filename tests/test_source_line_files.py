"""The kernel line an error names carries its own file, even where another file has the
same function at the same line (code objects compare equal across files)."""
from npusim.errors import kernel_source_line

SOURCE = "def where():\n    return kernel_source_line()\n"


def _function(filename: str):
    scope = {"kernel_source_line": kernel_source_line}
    exec(compile(SOURCE, filename, "exec"), scope)
    return scope["where"]


def test_same_function_in_two_files_names_each_file():
    first, second = _function("/tmp/a/test_one.py"), _function("/tmp/b/test_two.py")
    assert first.__code__ == second.__code__          # what made the files collide
    assert first() == "test_one.py:2"
    assert second() == "test_two.py:2"
