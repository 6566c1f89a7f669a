"""`dflash-check adapt`: write an adapter shim that makes a non-conforming target fit the DFlash contract."""

from __future__ import annotations

import sys
from typing import Optional

import click

__all__ = ["adapt_cmd", "plan_for_target"]


def _probe_paths(resolved, spec, framework: str, trust_remote_code: bool, notes: list[str]) -> dict[str, str]:
    """Paths from the deep inspection (the target built without weights), or {} when it cannot run."""
    from dflash_compat.deployment.options import CheckOptions
    from dflash_compat.inspection import inspect_target
    from dflash_compat.modelfacts import Skipped

    facts = inspect_target(resolved, spec, CheckOptions(trust_remote_code=trust_remote_code), framework)
    if isinstance(facts, Skipped):
        notes.append(f"deep inspection {facts.note}")
        return {}
    notes.extend(facts.notes)
    p = facts.paths
    if p is None:
        return {}
    found = {"embed": p.embed, "layers": p.layers, "norm": p.norm}
    if p.head and not p.head.endswith(".as_linear"):  # MLX: a tied head is the embedding's as_linear
        found["lm_head"] = p.head
    return {role: path for role, path in found.items() if path}


def _validate_mapping(resolved, spec, framework: str, mapping: dict[str, str], trust_remote_code: bool,
                      notes: list[str]) -> None:
    """Refuse a --map path the target's tree does not have (one line naming the closest paths that
    exist); when the tree cannot be built, say in `notes` that the paths were not validated."""
    from dflash_compat.exceptions import InputError
    from dflash_compat.inspection.tree_paths import check_paths
    from dflash_compat.modelfacts import Skipped

    found = check_paths(resolved, spec, framework, sorted(set(mapping.values())), trust_remote_code)
    if isinstance(found, Skipped):
        notes.append(f"--map paths not validated: the module tree could not be built ({found.reason}: "
                     f"{found.detail})")
        return
    for role, path in mapping.items():
        if path in found.missing:
            near = ", ".join(found.missing[path]) or "none"
            raise InputError(f"--map {role}={path}: {found.model_class} has no such module (built without weights); "
                             f"closest paths: {near}")


def _transformers_class(architectures) -> Optional[str]:
    """The config's first `architectures` entry when it names a class transformers has (the shim
    imports it by that name); None otherwise (unknown: the shim says so and uses AutoModelForCausalLM)."""
    arch = next((a for a in architectures or [] if isinstance(a, str)), None)
    if arch is None or not (arch.isascii() and arch.isidentifier()) or arch.startswith("_"):
        return None
    try:
        import transformers
    except ImportError:
        return None
    try:
        cls = getattr(transformers, arch, None)
    except Exception:  # noqa: BLE001 - transformers' lazy module raises for broken optional imports
        return None
    return arch if isinstance(cls, type) else None


def plan_for_target(
    target: str,
    framework: str = "auto",
    mapping: Optional[dict[str, str]] = None,
    *,
    revision: Optional[str] = None,
    token: Optional[str] = None,
    trust_remote_code: bool = False,
    notes: Optional[list[str]] = None,
):
    """The ShimPlan for TARGET: the built-in layout for its model_type, else the deep inspection's
    paths, then `mapping` (--map-file, --map) on top. Raises a DFlashCompatError on bad input."""
    from dflash_compat.adapters import registry
    from dflash_compat.adapters.shim import ShimPlan, validate_path
    from dflash_compat.pipeline.check import load_target
    from dflash_compat.resolve.refs import resolve

    notes = notes if notes is not None else []
    resolved = resolve(target, "target", revision=revision, token=token)
    spec = load_target(resolved)
    if framework == "auto":
        from dflash_compat.inspection import detect_framework

        framework = detect_framework(resolved)
    model_type = spec.model_type
    paths: dict[str, str] = {}
    source = []
    ref = registry.adapter_ref(model_type, framework)
    if ref is not None:
        try:
            paths = registry.layout_paths(registry.load_class(ref))
            source.append(f"the built-in {model_type} layout")
        except ImportError as exc:
            notes.append(f"built-in {model_type} layout unavailable ({exc})")
    mapping = dict(mapping or {})
    if not all(r in {**paths, **mapping} for r in ("embed", "layers")):
        found = _probe_paths(resolved, spec, framework, trust_remote_code, notes)
        for role, path in found.items():
            paths.setdefault(role, validate_path(path, f"deep inspection: {role}"))
        if found:
            source.append("the deep inspection of the model built without weights")
    if mapping:
        _validate_mapping(resolved, spec, framework, mapping, trust_remote_code, notes)
        paths.update(mapping)
        source.append("--map")
    arch = _transformers_class(spec.architectures) if framework == "torch" else None
    plan = ShimPlan(
        framework=framework,
        paths=paths,
        model_type=model_type if isinstance(model_type, str) else None,
        architecture=arch,
        source=", then ".join(source) or "--map",
    )
    if "embed" not in paths or "layers" not in paths:
        from dflash_compat.exceptions import InputError

        missing = [r for r in ("embed", "layers") if r not in paths]
        why = f" ({notes[-1]})" if notes else ""
        raise InputError(
            f"target {target}: cannot tell where its {' and '.join(missing)} live{why}; "
            f"pass --map {missing[0]}=PATH (e.g. --map embed=transformer.wte --map layers=transformer.h)"
        )
    return plan


@click.command("adapt", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("target")
@click.option("--output", "-o", type=click.Path(dir_okay=False),
              help="Write the shim to this .py file (default: print it to stdout).")
@click.option(
    "--framework", type=click.Choice(("auto", "torch", "mlx")), default="auto", show_default=True,
    help="Which kind of model the shim wraps: a transformers (PyTorch) model or an mlx-lm model; auto picks mlx "
    "for mlx-lm conversions (an mlx quantization block or mlx-format weights), else torch.",
)
@click.option(
    "--map", "maps", multiple=True, metavar="ROLE=PATH",
    help="Where a role lives in the model, e.g. --map embed=transformer.wte; repeat for several. "
    "Roles: embed, embed_proj, layers, norm, head_proj, lm_head.",
)
@click.option("--map-file", type=click.Path(dir_okay=False),
              help="Read ROLE = PATH pairs from a .json or .toml file (--map wins).")
@click.option("--force", is_flag=True, help="Let -o replace an existing file or symlink (never in a model folder).")
@click.option("--revision", help="Hub revision of TARGET (also TARGET@revision).")
@click.option("--token", envvar="HF_TOKEN", help="Hugging Face token for private or gated repos.")
@click.option("--trust-remote-code", is_flag=True,
              help="Allow importing the target repo's own Python code to find its modules.")
def adapt_cmd(target: str, output: Optional[str], framework: str, maps: tuple[str, ...], map_file: Optional[str],
              force: bool, revision: Optional[str], token: Optional[str], trust_remote_code: bool) -> None:
    """Write a Python adapter shim for TARGET: a standalone module whose wrap(model) exposes what
    DFlash engines and the reference runtime reach for (get_input_embeddings, lm_head,
    model.embed_tokens, model.layers, a forward with the cache and hidden states).

    \b
      dflash-check adapt gpt2 -o adapter.py
      dflash-check adapt ./my-model --map embed=backbone.tok \\
          --map layers=backbone.blocks -o adapter.py
      dflash-check TARGET --draft DRAFT --adapter adapter.py

    Paths come from the built-in layout for the model's model_type, else from building the model
    without weights, then from --map-file and --map. Exit codes: 0 written, 2 bad input.
    """
    from dflash_compat.adapters.shim import load_map_file, looks_like_shim, parse_map_options, render_shim, write_shim
    from dflash_compat.files.safe_write import check_output, model_folders

    protected = model_folders(target)
    if output is not None and output != "-":  # refused before the model is built, not after
        check_output(output, force=force, option="-o", is_ours=looks_like_shim, protected=protected)
    mapping = load_map_file(map_file) if map_file else {}
    mapping.update(parse_map_options(maps))
    notes: list[str] = []
    plan = plan_for_target(target, framework, mapping, revision=revision, token=token,
                           trust_remote_code=trust_remote_code, notes=notes)
    source = render_shim(plan)
    from dflash_compat.emitters._safe import printable

    for note in notes:  # after the shim is rendered: a refused plan is one error line, nothing else
        if note.startswith("--map "):
            click.echo(printable(f"dflash-check: warning: {' '.join(note.split())}"), err=True)
    if output is None or output == "-":
        click.echo(source, nl=False)
        return
    path = write_shim(source, output, force=force, protected=protected)

    roles = ", ".join(f"{role} -> {p}" for role, p in plan.checked().paths.items())
    fw = " --framework mlx" if plan.framework == "mlx" else ""
    from dflash_compat.emitters._safe import shell_quote
    from dflash_compat.terminal import wrap_block

    click.echo(wrap_block([printable(f"wrote {path} ({plan.framework}): {roles}"),
                           f"use it: dflash-check {shell_quote(target)} --draft DRAFT{fw} --adapter "
                           f"{shell_quote(str(path))}"], sys.stderr), err=True)
