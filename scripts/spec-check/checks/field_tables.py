"""Every field of every vectors file has its meaning in docs/spec/vectors/README.md."""

import json

from .common import check, VECTORS


def check_field_tables():
    """Every field name of every vectors file appears, in backticks, in that file's section of
    docs/spec/vectors/README.md (sphinx*.json: or in sphinx.md section 12 / 13.7), so a field
    added without its meaning fails here. description, regenerate, spec and name are covered
    by the README's conventions."""
    import re

    readme = (VECTORS / "README.md").read_text()
    sphinx_md = (VECTORS.parent / "sphinx.md").read_text()
    sphinx_md = sphinx_md[sphinx_md.index("## 12.") :]

    def keys(x, out):
        if isinstance(x, dict):
            for k, y in x.items():
                out.add(k)
                keys(y, out)
        elif isinstance(x, list):
            for y in x:
                keys(y, out)
        return out

    files = sorted(VECTORS.glob("*.json"))
    for f in files:
        m = re.search(r"^## " + re.escape(f.name) + r"\n(.*?)(?=^## |\Z)", readme, re.S | re.M)
        check(m is not None, f"vectors/README.md: no section for {f.name}")
        text = (m.group(1) if m else "") + (sphinx_md if f.name.startswith("sphinx") else "")
        spans = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", " ".join(re.findall(r"`([^`]*)`", text))))
        undocumented = keys(json.loads(f.read_text()), set()) - spans - {"description", "regenerate", "spec", "name"}
        check(not undocumented, f"vectors/README.md: {f.name} fields without a meaning: {sorted(undocumented)}")
    return len(files)
