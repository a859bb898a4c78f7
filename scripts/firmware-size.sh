#!/usr/bin/env bash
# Builds the STM32 firmware example (examples/firmware-stm32) in release and
# reports what it costs on the chip: flash and RAM (text, data, bss), and how
# much of the code is herdless against the HAL, the network stack and the
# rest.
#
# Code is attributed from the debug info (kept by the release profile; it
# never reaches flash): each instruction counts for the crate of the source
# line it was compiled from, except that helpers from `core` and `heapless`
# inlined into another crate count for that crate, and shared code with no
# crate of its own counts for the crates that call it, in proportion to
# their calls: what the machine outliner moved into OUTLINED_FUNCTION_n,
# and the `heapless` functions left out of line (a `Deque`'s `pop_front`
# for the types herdless keeps in one). Symbol names alone would
# credit much of herdless to the executor: async tasks are compiled into
# `TaskStorage::poll` with every future they await inlined, so that figure
# is printed too, for comparison. Herdless's share is then split by area
# (the wire session, the codec, the engine, each recipe, the driver...)
# the same way, to show where a smaller footprint would have to come from.
#
# Needs the llvm-tools rustup component (added when missing) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
firmware=examples/firmware-stm32

host=$(rustc -vV | sed -n 's/^host: //p')
tools=$(rustc --print sysroot)/lib/rustlib/$host/bin
if [ ! -x "$tools/llvm-size" ]; then
    rustup component add llvm-tools
fi

# The firmware's .cargo/config.toml (its target) only applies from inside
# its directory.
(cd "$firmware" && cargo build --release --locked)
# Wherever CARGO_TARGET_DIR or a config puts the build.
target=$(cd "$firmware" && cargo metadata --format-version 1 --no-deps --locked |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
elf=$target/thumbv7em-none-eabihf/release/herdless-firmware-stm32

# The exact size of every type on this target, from rustc's own layouts
# (-Zprint-type-sizes, which RUSTC_BOOTSTRAP allows on a stable compiler
# for this one build). In a target directory of its own: the flag changes
# every crate's fingerprint, so sharing one would rebuild both each time.
# Cleaning the firmware crate makes rustc print its types again.
types_target=$target/type-sizes
(cd "$firmware" && cargo clean --release --locked -p herdless-firmware-stm32 \
    --target-dir "$types_target" >/dev/null 2>&1 || true)
(cd "$firmware" && RUSTC_BOOTSTRAP=1 cargo rustc --release --locked \
    --target-dir "$types_target" -- -Zprint-type-sizes) >"$elf.types"

"$tools/llvm-size" -A "$elf" >"$elf.sections"
"$tools/llvm-nm" --print-size --size-sort "$elf" >"$elf.symbols"
"$tools/llvm-objdump" -d -l --no-show-raw-insn --debug-inlined-funcs=limits-only -j .text "$elf" >"$elf.lines"

python3 - "$elf" <<'PY'
import re
import sys

elf = sys.argv[1]
FLASH, RAM = 2048 * 1024, 192 * 1024  # STM32F429ZI

sections, addresses = {}, {}
for line in open(elf + ".sections"):
    parts = line.split()
    if len(parts) == 3 and parts[0].startswith(".") and parts[1].isdigit():
        sections[parts[0]] = int(parts[1])
        addresses[parts[0]] = int(parts[2])
text = sum(sections.get(s, 0) for s in (".vector_table", ".text", ".rodata"))
data = sections.get(".data", 0)
bss = sections.get(".bss", 0) + sections.get(".uninit", 0)
code = sections.get(".text", 0)

# Rows, in the order printed; crates not named here are "other".
GROUPS = [
    ("herdless-core", {"herdless_core"}),
    ("herdless-embassy", {"herdless_embassy"}),
    ("the firmware itself", {"herdless_firmware_stm32"}),
    ("HAL: embassy-stm32, PAC, cortex-m", {
        "embassy_stm32", "stm32_metapac", "embassy_hal_internal", "embassy_embedded_hal",
        "cortex_m", "cortex_m_rt", "critical_section", "vcell", "volatile_register",
    }),
    ("network: embassy-net, smoltcp", {
        "embassy_net", "embassy_net_driver", "smoltcp", "managed", "byteorder",
    }),
    ("embassy executor, time, sync, futures", {
        "embassy_executor", "embassy_executor_timer_queue", "cordyceps", "embassy_time",
        "embassy_time_driver", "embassy_time_queue_utils", "embassy_sync", "embassy_futures",
        "embedded_io", "embedded_io_async", "portable_atomic", "static_cell",
    }),
    # `__rustc::rust_begin_unwind` is the panic handler panic-probe provides.
    ("defmt, defmt-rtt, panic-probe", {"defmt", "defmt_rtt", "panic_probe", "__rustc"}),
    ("core, compiler_builtins", {"core", "compiler_builtins"}),
]
OTHER = "other"
HERDLESS = ("herdless-core", "herdless-embassy")
# Inlined code from these counts for the crate that called it.
UTILITY = {"core", "compiler_builtins", "heapless"}
group_of = {crate: name for name, crates in GROUPS for crate in crates}


def crate_of(symbol):
    """The crate of a mangled symbol: for a trait impl, the implementing
    type's crate (the trait's when the type is generic or primitive)."""
    if symbol.startswith("_ZN"):
        m = re.match(r"_ZN(\d+)", symbol)
        segment = symbol[m.end():m.end() + int(m.group(1))]
        path = re.search(r"([a-z_][a-z0-9_]*)\.\.", segment)
        return path.group(1) if path else segment
    if symbol.startswith("_R"):
        # v0 mangling: the crate root is `C`, a disambiguator, `<len><name>`
        # (with a `_` between when the name starts with one).
        m = re.search(r"C(?:s[0-9A-Za-z]*_)?(\d+)_?", symbol)
        return symbol[m.end():m.end() + int(m.group(1))] if m else None
    if symbol.startswith("_defmt") or symbol.startswith("__defmt"):
        return "defmt"
    if symbol.startswith("__aeabi") or symbol.startswith("__") and "div" in symbol:
        return "compiler_builtins"
    if symbol in ("memcpy", "memmove", "memset", "memcmp"):
        return "compiler_builtins"
    if symbol in ("Reset", "main", "__stext", "__pre_init", "DefaultHandler", "HardFault",
                  "HardFault_", "DefaultPreInit") or symbol.endswith("Handler"):
        return "cortex_m_rt"
    if re.fullmatch(r"[A-Z0-9_]+", symbol):
        return "embassy_stm32"  # interrupt vectors from bind_interrupts!
    if "embassy_time" in symbol:
        return "embassy_time"
    return None


def group(crate):
    return group_of.get(crate, OTHER)


# By symbol name: each function for the crate it is named after.
by_symbol = {}
tasks = 0
for line in open(elf + ".symbols"):
    parts = line.split()
    if len(parts) != 4 or parts[2] not in ("t", "T"):
        continue
    size = int(parts[1], 16)
    if "TaskStorage" in parts[3] and "4poll" in parts[3]:
        tasks += size
    g = group(crate_of(parts[3]))
    by_symbol[g] = by_symbol.get(g, 0) + size

# Inline-aware: each instruction for the crate of the source line it was
# compiled from; when that line is a utility's, for the innermost caller
# outside the utilities, from the inlining records (which name the calling
# function of each inlined range, though not every range is recorded).
registry = re.compile(r"/registry/src/[^/]+/([A-Za-z0-9_-]+?)-\d+\.\d+\.\d+[^/]*/")
local = [
    ("/core/src/", "herdless_core"),
    ("/transport-embassy/src/", "herdless_embassy"),
    ("/examples/firmware-stm32/src/", "herdless_firmware_stm32"),
]


def crate_of_file(path):
    m = registry.search(path)
    if m:
        return m.group(1).replace("-", "_")
    if "/library/compiler-builtins/" in path:
        return "compiler_builtins"
    if "/library/" in path and path.startswith("/rustc/"):
        return "core"
    for suffix, crate in local:
        if suffix in path:
            return crate
    return None


# Herdless's code by area, from the same walk: an instruction counts for
# the area of the herdless source line it came from, or of the last one
# before it in its function (a utility that line inlined).
AREAS = [
    ("wire session", ("/core/src/wire/session/",)),
    ("wire codec", ("/core/src/wire/",)),
    ("contender engine", ("/core/src/engine/",)),
    ("lock", ("/core/src/recipes/lock.rs", "/core/src/recipes/revoke.rs")),
    ("election", ("/core/src/recipes/election/",)),
    ("names and paths", ("/core/src/names/",)),
    ("shared types (errors, requests, events)", ("/core/src/",)),
    ("embassy driver", ("/transport-embassy/src/zk/", "/transport-embassy/src/tcp.rs",
                        "/transport-embassy/src/erased.rs", "/transport-embassy/src/log.rs")),
    ("embassy handles and errors", ("/transport-embassy/src/",)),
]
UNPLACED = "inlined helpers, no herdless line before them"


def area_of(path):
    for name, prefixes in AREAS:
        if any(prefix in path for prefix in prefixes):
            return name
    return None


by_area = {}
area = None  # the area of the last herdless source line in this function
outlined_areas = {}  # outlined function -> {herdless caller's area: calls}

by_code = {}
function = ""
source = None  # the crate of the current source line
active = []  # (callee, caller) of the inlined ranges open here
last = None  # (address, group) of the previous instruction
header = re.compile(r"^[0-9a-f]+ <(.+)>:$")
line_info = re.compile(r"^; (/\S+):\d+$")
marker = re.compile(r"^; \S+: (end of )?(\S+) inlined into (\S+)$")
insn = re.compile(r"^\s*([0-9a-f]+):\s")
called_function = re.compile(r"<([^<>+]+)>(?: |$)")
outlined_callers = {}  # outlined function -> {caller's group: calls}


def credit(address):
    """Gives the previous instruction the bytes up to `address`."""
    if last is not None and address > last[0]:
        by_code[last[1]] = by_code.get(last[1], 0) + address - last[0]
        if last[1] in HERDLESS:
            place = last[2] or UNPLACED
            by_area[place] = by_area.get(place, 0) + address - last[0]


def shared(name):
    """Whether the function `name` counts for its callers: code the
    outliner moved out of them, or a utility crate's function left out of
    line."""
    return (name.startswith("OUTLINED_FUNCTION")
            or crate_of(name) in UTILITY - {"core", "compiler_builtins"})


def owner():
    if shared(function):
        return ("outlined", function)
    if source is not None and source not in UTILITY:
        return group(source)
    callers = {caller for _, caller in active}
    innermost = [pair for pair in active if pair[0] not in callers]
    chain = []
    if innermost:
        callee, caller = innermost[-1]
        chain = [callee, caller]
        while len(chain) < 64:
            outer = [c for f, c in active if f == chain[-1]]
            if not outer or outer[-1] in chain:
                break
            chain.append(outer[-1])
    chain.append(function)
    for crate in map(crate_of, chain):
        if crate is not None and crate not in UTILITY:
            return group(crate)
    return group(source if source is not None else crate_of(function))


for line in open(elf + ".lines"):
    line = line.rstrip("\n")
    m = header.match(line)
    if m:
        function, source, active, area = m.group(1), None, [], None
        continue
    m = line_info.match(line)
    if m:
        source = crate_of_file(m.group(1))
        if group(source) in HERDLESS:
            area = area_of(m.group(1))
        continue
    m = marker.match(line)
    if m:
        pair = (m.group(2), m.group(3))
        if m.group(1) is None:
            active.append(pair)
        elif pair in active:
            del active[len(active) - 1 - active[::-1].index(pair)]
        continue
    m = insn.match(line)
    if m:
        address = int(m.group(1), 16)
        credit(address)
        last = (address, owner(), area)
        called = called_function.search(line)
        if called and shared(called.group(1)) and not shared(function):
            callers = outlined_callers.setdefault(called.group(1), {})
            callers[last[1]] = callers.get(last[1], 0) + 1
            if last[1] in HERDLESS:
                places = outlined_areas.setdefault(called.group(1), {})
                place = area or UNPLACED
                places[place] = places.get(place, 0) + 1
credit(addresses.get(".text", 0) + code)

# LLVM's machine outliner (on by default at "z") moves instruction
# sequences repeated across functions into OUTLINED_FUNCTION_n, which has
# no source lines, and `heapless` keeps some of its functions out of line:
# each one's bytes count for its callers, in proportion to their calls,
# so herdless's figure includes what was outlined from it and the
# `heapless` code it alone calls. (Until 2026-12 the `heapless` functions
# counted as "other".) Calls from one such function to another are not
# followed: the callee counts for the other callers it has.
for key in [k for k in by_code if isinstance(k, tuple)]:
    size = by_code.pop(key)
    # One that nothing calls (none so far) stays unattributed.
    callers = outlined_callers.get(key[1]) or {OTHER: 1}
    calls = sum(callers.values())
    for caller, n in callers.items():
        by_code[caller] = by_code.get(caller, 0) + size * n / calls
    for place, n in outlined_areas.get(key[1], {}).items():
        by_area[place] = by_area.get(place, 0) + size * n / calls
by_code = {name: round(size) for name, size in by_code.items()}


def pct(part, whole):
    return f"{100.0 * part / whole:.1f} %" if whole else "-"


print()
print(f"{'':<8}{'text':>8}{'data':>8}{'bss':>8}")
print(f"{'bytes':<8}{text:>8}{data:>8}{bss:>8}")
print(f"flash (text + data): {text + data:>6} B of {FLASH // 1024} KiB ({pct(text + data, FLASH)})")
print(f"RAM (data + bss):    {data + bss:>6} B of {RAM // 1024} KiB ({pct(data + bss, RAM)}); the stack has the rest")
print(f"text is .text (code) {code} B + .rodata {sections.get('.rodata', 0)} B + vector table {sections.get('.vector_table', 0)} B")
print()
total = sum(by_code.values())
rows = [name for name, _ in GROUPS] + [OTHER]
width = max(len(r) for r in rows) + 2
print(f"{'.text by component':<{width}}{'bytes':>8}{'share':>9}")
for name in rows:
    if by_code.get(name, 0):
        print(f"{name:<{width}}{by_code[name]:>8}{pct(by_code[name], total):>9}")
herdless = sum(by_code.get(n, 0) for n in HERDLESS)
print(f"{'herdless (core + embassy)':<{width}}{herdless:>8}{pct(herdless, total):>9}")
print(f"{'total':<{width}}{total:>8}")
print()
print(f"{'herdless by area':<{width + 12}}{'bytes':>8}")
places = [name for name, _ in AREAS] + [UNPLACED]
for name in places:
    if round(by_area.get(name, 0)):
        print(f"{name:<{width + 12}}{round(by_area[name]):>8}")
naive = sum(by_symbol.get(n, 0) for n in HERDLESS)
print()
print(f"By symbol names alone herdless would be {naive} B ({pct(naive, total)}), with {tasks} B in the")
print("executor's TaskStorage::poll, where the async tasks and what they await are inlined.")

# RAM herdless needs, exactly, from rustc's layouts on this target: the
# driver, the lock, the election, the largest herdless future the
# firmware awaits (each holds the futures it awaits in turn), and the
# frame buffers (the statics FRAME_RX and FRAME_TX).
type_size = {}
for line in open(elf + ".types"):
    m = re.match(r"^print-type-size type: `(.*)`: (\d+) bytes", line)
    if m:
        type_size[m.group(1)] = int(m.group(2))


def size_of(pattern):
    """The largest type whose name matches `pattern`, and its size."""
    found = [(n, s) for n, s in type_size.items() if re.fullmatch(pattern, n)]
    if not found:
        sys.exit(f"firmware-size: no type matching {pattern} in the layouts")
    return max(found, key=lambda f: f[1])


statics = {}
for line in open(elf + ".symbols"):
    parts = line.split()
    if len(parts) == 4 and parts[2] in "bBdD":
        for name in ("FRAME_RX", "FRAME_TX"):
            if re.search(rf"\d{name}17h", parts[3]):
                # A StaticCell's array and its one-byte "taken" flag.
                statics[name] = int(parts[1], 16) - 1
future_name, future = size_of(r"\{async fn body of herdless_embassy::.*")
ram = [
    ("driver: Zk<TcpTransport>", size_of(r"herdless_embassy::Zk<.*>")[1]),
    ("  of which the wire session", size_of(r"herdless_core::wire::Session<.*>")[1]),
    ("  of which its watch table", size_of(r"herdless_core::wire::session::watches::WatchTable<.*>")[1]),
    ("lock: Lock<128>", size_of(r"herdless_core::lock::Lock<\d+>")[1]),
    ("election: Election<128, 192>", size_of(r"herdless_core::election::Election<\d+, \d+>")[1]),
    ("largest herdless future awaited", future),
    ("receive frame buffer (FRAME_RX)", statics.get("FRAME_RX", 0)),
    ("send frame buffer (FRAME_TX)", statics.get("FRAME_TX", 0)),
]
print()
print(f"{'RAM herdless needs (exact, rustc layouts)':<{width + 12}}{'bytes':>8}")
for name, size in ram:
    print(f"{name:<{width + 12}}{size:>8}")
needed = sum(size for name, size in ram if not name.startswith("  "))
print(f"{'herdless in all':<{width + 12}}{needed:>8}")
short = re.sub(r"herdless_embassy::|herdless_core::|<'_, '_>|<'_>|'_, ", "", future_name)
print(f"(the largest future: {short[:100]})")
main_name, main_task = size_of(r"\{async fn body of ____embassy_main_task::.*\}")
print(f"the firmware's main task, which holds the driver, the recipes and the futures: {main_task} B")
PY
