"""The plan as the text a person approves. Pure.

Every line passes through pki.vocabulary.escaped, the one function that shows a string: whatever field a
manifest string travels in (a path, a row's meaning, an argument), nothing shown is reordered, hidden or
overwritten. The app's argv is shown one argument per line, quoted, so where one ends is never in doubt.
"""

from __future__ import annotations

from launcher.policy.plan import ComponentPlan, Plan
from pki.vocabulary import escaped


def _named(paths: tuple[str, ...], groups: tuple[tuple[str, tuple[str, ...]], ...]) -> str:
    """`paths` with each group that is wholly present replaced by its label, where its first member was."""
    shown = list(paths)
    for label, members in groups:
        if members and set(members) <= set(shown):
            first = min(shown.index(member) for member in members)
            shown = [path for path in shown if path not in members]
            shown.insert(first, label)
    return ", ".join(shown) or "-"


def _ports(component: ComponentPlan) -> str:
    tcp = f"TCP {', '.join(map(str, component.tcp_connect))}" if component.tcp_connect else ""
    udp = "UDP (its resolver)" if component.udp else ""
    return "; ".join(part for part in (tcp, udp) if part) or "-"


def _argv(argv: tuple[str, ...]) -> list[str]:
    return [f"  {f'argv[{index}]':<12} \"{argument}\"" for index, argument in enumerate(argv)]


def _component(plan: Plan, component: ComponentPlan) -> list[str]:
    lines = [f"{component.role}: memory {component.max_memory_mb} MB, {component.max_pids} pids"]
    if component.role == "app":
        lines += _argv(plan.argv)
        if plan.start_dir:
            where = "the workspace (app.cwd)" if plan.start_dir == plan.workspace else "its private dir"
            lines.append(f"  {'starts in':<12} {plan.start_dir}, {where}")
    for label, items in (("reads", component.reads), ("writes", component.writes),
                         ("executes", component.executes)):
        lines.append(f"  {label:<12} {_named(items, plan.path_groups)}")
    lines.append(f"  {'ports':<12} {_ports(component)}")
    for label, items in (("connects to", component.connects), ("edges out", component.edges_out),
                         ("edges in", component.edges_in)):
        lines.append(f"  {label:<12} {', '.join(items) or '-'}")
    return lines


def render_plan(plan: Plan) -> str:
    """The plan as plain text for a person (no colour, no terminal codes, every string escaped)."""
    lines = [f"session {plan.session} (trust domain {plan.trust_domain}, ttl {plan.ttl_s} s)",
             f"workspace {plan.workspace}", f"manifest {plan.sha256}", ""]
    if plan.path_groups:
        lines.append("path lists named below (each component gets exactly these from the kernel):")
        lines += [f"  {label:<12} {', '.join(paths)}" for label, paths in plan.path_groups]
        lines.append("")
    for component in plan.components:
        lines += _component(plan, component)
    lines += ["", "rows:"]
    width = max((len(row.row_id) for row in plan.rows), default=0)
    for row in plan.rows:
        state = "held" if row.held else "UNHELD"
        lines.append(f"  {row.component:<8} {row.row_id:<{width}} {row.kind:<11} {state:<7} {row.meaning}")
        lines.append(f"  {'':<8} {'':<{width}} {'':<11} {'':<7} by {row.held_by}"
                     + ("" if row.held else f"; unheld: {row.why_unheld}"))
    lines += ["", f"{plan.unheld_count} of {len(plan.rows)} rows unheld on this machine"]
    lines += [f"not covered: {gap}" for gap in plan.not_covered]
    return "\n".join(escaped(line) for line in lines)
