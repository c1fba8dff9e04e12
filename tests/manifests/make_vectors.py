"""Regenerate manifests/vectors: `.venv/bin/python tests/manifests/make_vectors.py`.

Every "hand" argument is the expected canonical output written by hand from RFC 8785, independently of
the code; the generator stops if the code disagrees. Refusal vectors assert their pointer the same way.
"""
import hashlib
import json
import pathlib

from launcher.manifest import ManifestError, canonical_bytes, load_manifest, parse_strict

ROOT = pathlib.Path(__file__).resolve().parents[2]

OUT = (ROOT / "manifests/vectors")
for f in OUT.glob("*"):
    f.unlink()
index: list[dict[str, object]] = []

def h(b): return "sha256:" + hashlib.sha256(b).hexdigest()

def accept(name, kind, raw, note, hand=None):
    if isinstance(raw, str):
        raw = raw.encode()
    canon = canonical_bytes(parse_strict(raw)) if kind == "jcs" else load_manifest(raw).canonical
    if hand is not None:
        assert canon == hand, (name, canon, hand)
    (OUT / f"{name}.in").write_bytes(raw)
    (OUT / f"{name}.canonical").write_bytes(canon)
    entry = {"name": name, "kind": kind, "input": f"{name}.in", "canonical": f"{name}.canonical",
             "sha256": h(canon), "note": note}
    if hand is not None:
        entry["verified"] = "expected canonical bytes written by hand, independently of the code"
    index.append(entry)

def refuse(name, raw, ptr, note):
    if isinstance(raw, str):
        raw = raw.encode()
    try:
        load_manifest(raw)
    except ManifestError as e:
        assert e.pointer == ptr, (name, e.pointer, ptr, str(e))
    else:
        raise AssertionError(name + " accepted")
    (OUT / f"{name}.in").write_bytes(raw)
    index.append({"name": name, "kind": "refuse", "input": f"{name}.in", "exit": 65, "pointer": ptr, "note": note})

# ---------------- JCS layer (strict parse + RFC 8785) ----------------
accept("jcs-rfc8785-sorting", "jcs",
 '{\n  "\\u20ac": "Euro Sign",\n  "\\r": "Carriage Return",\n  "\\ufb33": "Hebrew Letter Dalet With Dagesh",\n'
 '  "1": "One",\n  "\\ud83d\\ude00": "Emoji: Grinning Face",\n  "\\u0080": "Control",\n'
 '  "\\u00f6": "Latin Small Letter O With Diaeresis"\n}\n',
 "RFC 8785 section 3.2.3 sorting example: the astral key (UTF-16 D83D DE00) sorts before U+FB33, "
 "the reverse of code-point order",
 hand=b'{"\\r":"Carriage Return","1":"One","\xc2\x80":"Control","\xc3\xb6":"Latin Small Letter O With Diaeresis",'
      b'"\xe2\x82\xac":"Euro Sign","\xf0\x9f\x98\x80":"Emoji: Grinning Face",'
      b'"\xef\xac\xb3":"Hebrew Letter Dalet With Dagesh"}')
accept("jcs-rfc8785-strings", "jcs",
 '{\n  "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",\n  "literals": [null, true, false]\n}\n',
 "RFC 8785 section 3.2.2 example with the numbers member removed (the manifest refuses floats)",
 hand=b'{"literals":[null,true,false],"string":"\xe2\x82\xac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}')
accept("jcs-utf16-order-disagrees", "jcs",
 '{"\\ufb01": "ligature fi, U+FB01", "\\ud83d\\ude00": "grinning face, U+1F600"}',
 "Python's sorted() puts U+FB01 first (code points); UTF-16 code units put U+1F600 (D83D) first",
 hand=b'{"\xf0\x9f\x98\x80":"grinning face, U+1F600","\xef\xac\x81":"ligature fi, U+FB01"}')
accept("jcs-astral-keys", "jcs",
 '{"\\uffff": 4, "\\ue000": 3, "\\ud83d\\ude00": 2, "\\ud800\\udc00": 1}',
 "U+10000 (D800 DC00) < U+1F600 (D83D DE00) < U+E000 < U+FFFF in UTF-16; code points put E000 and FFFF first",
 hand=b'{"\xf0\x90\x80\x80":1,"\xf0\x9f\x98\x80":2,"\xee\x80\x80":3,"\xef\xbf\xbf":4}')
accept("jcs-raw-astral-key", "jcs",
 '{"z": 0, "\U0001F600": 1, "\uFB01": 2}',
 "the same keys written as raw UTF-8 instead of escapes",
 hand=b'{"z":0,"\xf0\x9f\x98\x80":1,"\xef\xac\x81":2}')
accept("jcs-control-escapes", "jcs",
 '["\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f\\u007f\\u0020"]',
 "controls: short escapes where JSON has them, else lowercase \\u00xx; DEL (0x7f) and space stay raw",
 hand=b'["\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f\x7f "]')
accept("jcs-solidus-quote-backslash", "jcs",
 '{"s": "\\/ \\" \\\\ /"}',
 "escaped solidus becomes '/', quote and backslash stay escaped",
 hand=b'{"s":"/ \\" \\\\ /"}')
accept("jcs-escaped-key-names", "jcs",
 '{"\\u0062": 2, "\\u0061": 1}',
 "keys written with escapes are compared and written unescaped",
 hand=b'{"a":1,"b":2}')
accept("jcs-large-integers", "jcs",
 '[9007199254740991, -9007199254740991, 0, -0, 1000000, 4503599627370496]',
 "the safe-integer extremes are kept exactly; -0 is written 0",
 hand=b'[9007199254740991,-9007199254740991,0,0,1000000,4503599627370496]')
accept("jcs-empty-containers", "jcs",
 '{ "d" : [ { } , [ ] ] , "c" : "" , "b" : [ ] , "a" : { } }',
 "empty object, list and string",
 hand=b'{"a":{},"b":[],"c":"","d":[{},[]]}')
accept("jcs-whitespace", "jcs",
 '\r\n\t {\t"b"\r\n:\n[ 1 ,\t2 ] ,\n"a" : null }\n\n',
 "every kind of JSON whitespace, everywhere it may appear",
 hand=b'{"a":null,"b":[1,2]}')
accept("jcs-nested-key-order", "jcs",
 '{"z": {"y": {"x": 1, "w": 2}, "v": 3}, "a": [{"c": 1, "b": 2}]}',
 "key order is normalised at every depth; list order is kept",
 hand=b'{"a":[{"b":2,"c":1}],"z":{"v":3,"y":{"w":2,"x":1}}}')
accept("jcs-key-prefixes-and-case", "jcs",
 '{"b": 1, "ab": 2, "aa": 3, "a": 4, "": 5, "B": 6, "A": 7}',
 "empty key first, a prefix before its extensions, uppercase before lowercase",
 hand=b'{"":5,"A":7,"B":6,"a":4,"aa":3,"ab":2,"b":1}')
accept("jcs-non-ascii-values", "jcs",
 '{"greeting": "Gr\\u00fc\\u00dfe", "raw": "Grüße 日本語", "emoji": "\\ud83d\\ude00"}',
 "non-ASCII values are written as raw UTF-8, never escaped",
 hand='{"emoji":"😀","greeting":"Grüße","raw":"Grüße 日本語"}'.encode())
accept("jcs-depth-32", "jcs", "[" * 32 + "]" * 32,
 "exactly 32 levels of nesting are accepted", hand=b"[" * 32 + b"]" * 32)
accept("jcs-literals", "jcs", '[true , false , null]', "the three literals", hand=b"[true,false,null]")

# ---------------- whole manifests ----------------
demo = (ROOT / "manifests/demo.json").read_text()
accept("manifest-demo", "manifest", demo, "manifests/demo.json as shipped")
accept("manifest-coding-agent", "manifest", (ROOT / "manifests/examples/coding-agent.json").read_text(),
       "manifests/examples/coding-agent.json")
accept("manifest-research-agent", "manifest",
       (ROOT / "manifests/examples/research-agent.json").read_text(),
       "manifests/examples/research-agent.json")
d = json.loads(demo)
def reorder(o):
    if isinstance(o, dict):
        return {k: reorder(o[k]) for k in reversed(list(o))}
    if isinstance(o, list):
        return [reorder(x) for x in o]
    return o
reordered = json.dumps(reorder(d), indent="\t", ensure_ascii=True).replace('"demo"', '"\\u0064emo"')
accept("manifest-demo-reordered", "manifest", reordered,
       "the demo with every key order reversed, tabs, ASCII escapes and an escaped 'd': same hash as manifest-demo")
MIN = {"sharness": "manifest/v0", "session": {"name": "min", "trust_domain": "min.sharness.test", "ttl_s": 60},
       "workspace": "/srv/sh-min", "app": {"argv": ["true"], "process": {"max_memory_mb": 16, "max_pids": 1}}}
def mk(**kw):
    m = json.loads(json.dumps(MIN))
    for path, v in kw.items():
        cur = m
        keys = path.split("__")
        for k in keys[:-1]:
            cur = cur.setdefault(k, {})
        cur[keys[-1]] = v
    return m
def argv(*args): return mk(app={"argv": list(args), "process": {"max_memory_mb": 16, "max_pids": 1}})
accept("manifest-minimal", "manifest", json.dumps(MIN, indent=1), "the app alone: no door, no edge, smallest limits")
accept("manifest-empty-edges", "manifest", json.dumps(mk(doors={"fs": {"refuse_secrets": False, "max_file_bytes": 0,
       "max_total_bytes": 0, "max_files": 0}}, edges=[])),
       "an explicit empty edge list: the fs door starts but nobody may call it (differs from omitting edges)")
accept("manifest-default-edges", "manifest", json.dumps(mk(doors={"fs": {"refuse_secrets": False, "max_file_bytes": 0,
       "max_total_bytes": 0, "max_files": 0}})),
       "the same without 'edges': the default [app, fs] applies, and the hash differs from manifest-empty-edges")
accept("manifest-non-ascii-argv", "manifest",
       json.dumps(mk(app={"argv": ["/opt/agent/bin/agent", "--greet", "Grüße \U0001F600", "\u65e5\u672c"],
                          "process": {"max_memory_mb": 64, "max_pids": 8}}), ensure_ascii=True),
       "non-ASCII and astral argv written as \\u escapes: canonical bytes hold raw UTF-8")
accept("manifest-script-argument", "manifest", json.dumps(argv("/bin/sh", "-c", "echo one\n\techo two")),
       "a tab and a newline in an argument after the program: allowed, and shown escaped in the plan")
accept("manifest-max-integers", "manifest", json.dumps(mk(doors={"fs": {"refuse_secrets": True,
       "max_file_bytes": 9007199254740991, "max_total_bytes": 9007199254740991, "max_files": 9007199254740991}})),
       "2^53-1 in every size row")

# ---------------- refusals ----------------
GOOD = json.dumps(MIN)
def j(m): return json.dumps(m)
refuse("refuse-not-utf8", GOOD.encode().replace(b'"min"', b'"m\xffn"'), "", "invalid UTF-8 byte")
refuse("refuse-overlong-utf8", GOOD.encode().replace(b'"min"', b'"m\xc1\xa9n"'), "", "overlong UTF-8 encoding of 'i'")
refuse("refuse-bom", b"\xef\xbb\xbf" + GOOD.encode(), "", "UTF-8 byte order mark")
refuse("refuse-trailing-comma", GOOD[:-1] + ",}", "", "not JSON: trailing comma")
refuse("refuse-comment", "// policy\n" + GOOD, "", "not JSON: a comment")
refuse("refuse-duplicate-top", GOOD[:-1] + ', "workspace": "/srv/other"}', "/workspace", "duplicate top-level key")
refuse("refuse-duplicate-nested", GOOD.replace('"max_pids": 1}', '"max_pids": 1, "max_pids": 2}'),
       "/app/process/max_pids", "duplicate key two levels down")
refuse("refuse-duplicate-escaped", GOOD.replace('"ttl_s": 60', '"ttl_s": 60, "ttl\\u005fs": 61'), "/session/ttl_s",
       "duplicate key spelled with an escape")
refuse("refuse-float", GOOD.replace('"ttl_s": 60', '"ttl_s": 60.0'), "/session/ttl_s", "a float, even integral")
refuse("refuse-exponent", GOOD.replace('"ttl_s": 60', '"ttl_s": 6E1'), "/session/ttl_s", "an exponent")
refuse("refuse-nan", GOOD.replace('"max_pids": 1', '"max_pids": NaN'), "/app/process/max_pids", "NaN")
refuse("refuse-infinity", GOOD.replace('"max_pids": 1', '"max_pids": -Infinity'), "/app/process/max_pids",
       "-Infinity")
refuse("refuse-integer-too-large", j(mk(doors={"fs": {"refuse_secrets": True, "max_file_bytes": 1,
       "max_total_bytes": 2**53, "max_files": 1}})), "/doors/fs/max_total_bytes", "2^53, one past the safe range")
refuse("refuse-integer-too-small", GOOD.replace('"ttl_s": 60', '"ttl_s": -9007199254740992'), "/session/ttl_s",
       "-(2^53), one past the safe range")
refuse("refuse-lone-surrogate", GOOD.replace('["true"]', '["true", "\\ud800"]'), "/app/argv/1",
       "a lone high surrogate escape")
refuse("refuse-boolean-for-integer", GOOD.replace('"max_memory_mb": 16', '"max_memory_mb": true'),
       "/app/process/max_memory_mb", "true where an integer belongs")
refuse("refuse-unknown-key-top", j({**MIN, "colour": "blue"}), "/colour", "unknown top-level key")
refuse("refuse-unknown-key-door", j(mk(doors={"fs": {"refuse_secrets": True, "max_file_bytes": 1,
       "max_total_bytes": 1, "max_files": 1, "writable": ["src"]}})), "/doors/fs/writable", "unknown fs row")
refuse("refuse-unknown-door", j(mk(doors={"printer": {}})), "/doors/printer", "a door that does not exist")
refuse("refuse-wrong-version", j({**MIN, "sharness": "manifest/v1"}), "/sharness", "unknown manifest version")
refuse("refuse-missing-version", j({k: v for k, v in MIN.items() if k != "sharness"}), "/sharness",
       "no version")
refuse("refuse-relative-workspace", j(mk(workspace="srv/sh-min")), "/workspace", "relative path")
refuse("refuse-dotdot", j(mk(app={"argv": ["true"], "files": {"read": ["/srv/../etc"]},
       "process": {"max_memory_mb": 16, "max_pids": 1}})), "/app/files/read/0", "'..' component")
refuse("refuse-dot", j(mk(app={"argv": ["true"], "files": {"exec": ["/opt/./bin"]},
       "process": {"max_memory_mb": 16, "max_pids": 1}})), "/app/files/exec/0", "'.' component")
refuse("refuse-double-slash", j(mk(workspace="/srv//sh-min")), "/workspace", "'//'")
refuse("refuse-trailing-slash", j(mk(workspace="/srv/sh-min/")), "/workspace", "trailing '/'")
refuse("refuse-nul-in-path", j(mk(workspace="/srv/sh-\u0000min")), "/workspace", "NUL in a path")
refuse("refuse-control-in-path", j(mk(workspace="/srv/sh-\nmin")), "/workspace", "newline in a path")
refuse("refuse-fs-row-absolute", j(mk(doors={"fs": {"refuse_secrets": True, "max_file_bytes": 1,
       "max_total_bytes": 1, "max_files": 1, "read_only": ["/.git"]}})), "/doors/fs/read_only/0",
       "fs rows are relative to the workspace")
refuse("refuse-fs-row-dotdot", j(mk(doors={"fs": {"refuse_secrets": True, "max_file_bytes": 1,
       "max_total_bytes": 1, "max_files": 1, "hidden": ["../.ssh"]}})), "/doors/fs/hidden/0", "'..' in an fs row")
refuse("refuse-trust-domain-uppercase", j(mk(session={"name": "min", "trust_domain": "Min.sharness.test",
       "ttl_s": 60})), "/session/trust_domain", "uppercase trust domain")
refuse("refuse-trust-domain-scheme", j(mk(session={"name": "min", "trust_domain": "spiffe://min.test",
       "ttl_s": 60})), "/session/trust_domain", "a SPIFFE ID where a trust domain belongs")
refuse("refuse-ttl-too-short", j(mk(session={"name": "min", "trust_domain": "min.test", "ttl_s": 59})),
       "/session/ttl_s", "ttl below 60 s")
refuse("refuse-ttl-too-long", j(mk(session={"name": "min", "trust_domain": "min.test", "ttl_s": 86401})),
       "/session/ttl_s", "ttl above 86400 s")
refuse("refuse-empty-argv", j(mk(app={"argv": [], "process": {"max_memory_mb": 16, "max_pids": 1}})),
       "/app/argv", "empty argv")
refuse("refuse-empty-program", j(mk(app={"argv": [""], "process": {"max_memory_mb": 16, "max_pids": 1}})),
       "/app/argv/0", "empty program name")
FS = {"refuse_secrets": True, "max_file_bytes": 1, "max_total_bytes": 1, "max_files": 1}
refuse("refuse-edge-not-started", j(mk(doors={"fs": FS}, edges=[["app", "net"]])), "/edges/0/1",
       "an edge to a door that is not started")
refuse("refuse-self-edge", j(mk(doors={"fs": FS}, edges=[["fs", "fs"]])), "/edges/0", "a self-edge")
refuse("refuse-duplicate-edge", j(mk(doors={"fs": FS}, edges=[["app", "fs"], ["app", "fs"]])), "/edges/1",
       "the same edge twice")
refuse("refuse-edge-into-app", j(mk(doors={"fs": FS}, edges=[["fs", "app"]])), "/edges/0/1",
       "an edge into the app, which serves nothing")
refuse("refuse-row-for-role-not-started", j(mk(doors={"net": {"allow": {"shell": ["pypi.org:443"]}}})),
       "/doors/net/allow/shell", "net rows for the shell, which is not started")
SECRET = {"from": "/etc/sharness/secrets/k", "roles": ["model"], "hosts": ["api.anthropic.com"]}
refuse("refuse-secret-role-not-started", j(mk(doors={"keys": {"secrets": {"k": SECRET}}})),
       "/doors/keys/secrets/k/roles/0", "a secret for the model door, which is not started")
refuse("refuse-model-secret-missing", j(mk(doors={"keys": {"secrets": {}}, "model": {"upstream": "https://api.anthropic.com",
       "secret": "k", "budget_microusd": 1}})), "/doors/model/secret", "the model door's secret is not defined")
refuse("refuse-secret-in-workspace", j(mk(doors={"keys": {"secrets": {"k": {**SECRET, "from": "/srv/sh-min/.env"}}},
       "model": {"upstream": "https://api.anthropic.com", "secret": "k", "budget_microusd": 1}})),
       "/doors/keys/secrets/k/from", "a secret stored inside the workspace")
refuse("refuse-hidden-but-shell-reads", j(mk(doors={"fs": {**FS, "hidden": [".env"]},
       "shell": {"workspace": "read"}})), "/doors/fs/hidden/0", "fs.hidden while the shell reads the workspace")
refuse("refuse-ip-literal-not-allowed", j(mk(doors={"net": {"allow": {"app": ["192.0.2.7:443"]}}})),
       "/doors/net/allow/app/0", "an IP literal without allow_ip_literals")
refuse("refuse-wildcard-tld", j(mk(doors={"net": {"allow": {"app": ["*.com:443"]}}})),
       "/doors/net/allow/app/0", "a wildcard over a whole top-level domain")
# Strings a person cannot read for what they are (pki/vocabulary/legible.py): refused in keys and values alike.
refuse("refuse-bidi-override-in-read-path", j(mk(app={"argv": ["true"],
       "files": {"read": ["/srv/invoice-\u202egnp.sh"]}, "process": {"max_memory_mb": 16, "max_pids": 1}})),
       "/app/files/read/0",
       "U+202E RIGHT-TO-LEFT OVERRIDE: the path shows as /srv/invoice-hs.png")
refuse("refuse-raw-bidi-isolate-in-workspace", json.dumps(mk(workspace="/srv/sh-\u2067min"), ensure_ascii=False),
       "/workspace", "U+2067 RIGHT-TO-LEFT ISOLATE written as raw UTF-8, not as an escape")
refuse("refuse-zero-width-in-fs-row", j(mk(doors={"fs": {**FS, "read_only": [".git\u200b"]}})),
       "/doors/fs/read_only/0", "U+200B ZERO WIDTH SPACE: '.git\u200b' looks like '.git' and is another name")
refuse("refuse-word-joiner-in-hidden", j(mk(doors={"fs": {**FS, "hidden": [".e\u2060nv"]}})),
       "/doors/fs/hidden/0", "U+2060 WORD JOINER, another zero-width character")
refuse("refuse-bom-inside-string", j(mk(workspace="/srv/\ufeffsh-min")), "/workspace",
       "U+FEFF ZERO WIDTH NO-BREAK SPACE inside a string (a BOM anywhere but the start is zero-width)")
refuse("refuse-variation-selector-in-fs-row", j(mk(doors={"fs": {**FS, "append_only": ["log\ufe0f"]}})),
       "/doors/fs/append_only/0", "U+FE0F VARIATION SELECTOR-16: default-ignorable, nothing is drawn")
refuse("refuse-c1-in-session-name", j(mk(session={"name": "min\u0085", "trust_domain": "min.test", "ttl_s": 60})),
       "/session/name", "U+0085 NEXT LINE, a C1 control")
refuse("refuse-csi-in-session-name", j(mk(session={"name": "min\u009b2J", "trust_domain": "min.test", "ttl_s": 60})),
       "/session/name", "U+009B, the C1 control sequence introducer (a terminal reads it as ESC [)")
refuse("refuse-escape-in-argument", j(argv("true", "\u001b[2K\u001b[1Gok")), "/app/argv/1",
       "ESC (U+001B) in an argument: a terminal control sequence that erases what the plan showed")
refuse("refuse-carriage-return-in-argument", j(argv("/bin/sh", "-c", "rm -rf ~\recho hello")), "/app/argv/2",
       "a carriage return, which overwrites the line shown before it (tab and newline are allowed in argv[1:])")
refuse("refuse-tab-in-program", j(argv("tr\tue")), "/app/argv/0", "a tab in the program name (argv[0])")
refuse("refuse-line-separator-in-argument", j(argv("true", "a\u2028b")), "/app/argv/1", "U+2028 LINE SEPARATOR")
refuse("refuse-paragraph-separator-in-host", j(mk(doors={"net": {"allow": {"app": ["pypi.org:443\u2029"]}}})),
       "/doors/net/allow/app/0", "U+2029 PARAGRAPH SEPARATOR")
refuse("refuse-tag-characters-in-argument", j(argv("true", "ok\U000e0069\U000e0067\U000e006e")),
       "/app/argv/1", "Unicode tag characters (U+E0069...): invisible text smuggled after 'ok'")
refuse("refuse-private-use-in-workspace", j(mk(workspace="/srv/sh-\ue000")), "/workspace",
       "U+E000, private use: how it looks depends on the font")
refuse("refuse-unassigned-in-workspace", j(mk(workspace="/srv/sh-\u0378")), "/workspace",
       "U+0378, unassigned: no one can tell how it will look")
refuse("refuse-bidi-in-key", j(mk(doors={"keys": {"secrets": {"k\u202e": SECRET}}})), "/doors/keys/secrets",
       "a bidi control in a key: named at the object holding it, so the pointer carries no such character")
refuse("refuse-zero-width-in-unknown-key", j({**MIN, "sharness\u200d": "x"}), "",
       "U+200D ZERO WIDTH JOINER in a top-level key: refused before the schema would quote it")
refuse("refuse-too-deep", GOOD.replace('["true"]', '["true", ' + "[" * 31 + "]" * 31 + "]"),
       "/app/argv/1" + "/0" * 29, "the first list at level 33 (the root object is level 1)")

(OUT / "index.json").write_text(json.dumps({"format": "sharness manifest vectors v1", "vectors": index},
                                           indent=2, ensure_ascii=False) + "\n")
refusals = [v for v in index if v["kind"] == "refuse"]
verified = [v for v in index if "verified" in v]
print(len(index), "vectors;", len(refusals), "refusals;", len(verified), "hand-verified")
