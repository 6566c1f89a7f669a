"""`train` on several processes (torch.distributed, gloo on the CPU), proven on the tiny pair of test_train.py:

- `train --nproc-per-node 2` at 2 sequences per rank follows one process at 4 sequences step by step (the
  same batches and anchors: sampler.py's one draw per step), exports a draft that `check` passes and
  `smoke` runs losslessly, and writes TensorBoard events and the loss / tau plot;
- `torchrun ... dflash-check train --shard-target always` (the target's decoder layers FSDP2-sharded over the
  2 ranks) follows the same curve, and its checkpoint resumes in one process to the same losses as an
  uninterrupted single-process run (a different rank count);
- bad input stops every rank with one line; no rank outlives its launcher.

Tolerance: the ranks' losses equal one process's within 1e-5 relative at every step (float32; measured
differences are below 1e-6: the sums over the batch are split between the ranks and added in another order).
The subprocess timeouts are hang guards only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from dflash_compat.cli.app import cli  # noqa: E402
from dflash_compat.train import TrainConfig, prepare  # noqa: E402
from dflash_compat.train.loop import run_training  # noqa: E402

from .test_train import _pair  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
HANG_GUARD_S = 600
REL_TOL = 1e-5
STEPS = 6
COMMON = ["--seq-len", "46", "--anchors", "40", "--lr", "3e-3", "--warmup", "2", "--eval-every", "3",
          "--export-dtype", "float32", "--device", "cpu", "--seed", "2"]
SETTINGS = dict(seq_len=46, anchors=40, lr=3e-3, warmup=2, eval_every=3, export_dtype="float32", device="cpu",
                seed=2, eval_new_tokens=64)


def _left(marker: Path) -> list[str]:
    """Processes whose command line names `marker` (the run's -o folder): the launcher and its ranks (torch's
    elastic agent starts each rank in a session of its own)."""
    return subprocess.run(["pgrep", "-f", str(marker)], capture_output=True, text=True).stdout.split()


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """A launcher in its own session; afterwards no process of the run (named by its -o folder) may be left."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("WORLD_SIZE", None)
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    out = Path(cmd[cmd.index("-o") + 1])
    assert not _left(out), f"processes of the run still running: {_left(out)}"
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def _losses(out: Path) -> list[float]:
    return [h["loss"] for h in json.loads((out / "training.json").read_text())["history"]]


def _close(a: list[float], b: list[float]) -> None:
    assert len(a) == len(b)
    for step, (x, y) in enumerate(zip(a, b), 1):
        assert abs(x - y) <= REL_TOL * max(1.0, abs(x)), (step, x, y)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("dist")
    target, draft, data = _pair(root)
    single = run_training(prepare(str(target), str(draft), str(data), str(root / "one"),
                                  TrainConfig(steps=STEPS, batch_size=4, **SETTINGS)), progress=False, log=lambda _: None)
    launched = _run([str(ROOT / ".venv/bin/dflash-check") if (ROOT / ".venv/bin/dflash-check").exists()
                     else "dflash-check", "train", str(target), "--draft", str(draft), "--data", str(data),
                     "-o", str(root / "two"), "--steps", str(STEPS), "--batch-size", "2", "--nproc-per-node", "2",
                     *COMMON], root)
    return root, target, draft, data, single, launched


def test_two_ranks_follow_one_process_at_the_same_global_batch(runs):
    root, _, _, _, single, launched = runs
    assert launched.returncode == 0, launched.stderr[-3000:]
    two = json.loads((root / "two" / "training.json").read_text())
    assert two["ranks"] == 2 and two["global_batch"] == 4 and not two["target_sharded"]
    _close([h["loss"] for h in single.history], _losses(root / "two"))
    # the held-out tau, measured with the prompts shared out over the ranks, is the one process's
    assert [h["tau"] for h in two["history"]] == [h["tau"] for h in single.history]
    # one rank reports: one result line, one progress line per logged step
    assert launched.stdout.count("trained 6 steps") == 1
    assert launched.stderr.count("step 6/6") == 1 and "tok/s" in launched.stderr


def test_the_ranks_export_passes_check_and_smoke(runs):
    root, target, _, _, _, _ = runs
    from dflash_compat.init_draft.verify import check_pair

    report = check_pair(str(target), str(root / "two"), deep=True)
    assert not [f for f in report.findings if f.severity == "error"], report.findings
    res = CliRunner().invoke(cli, ["smoke", str(target), "--draft", str(root / "two"), "--prompt-ids", "3,5,7,2,9,4",
                                   "--max-new-tokens", "24", "-f", "json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["summary"]["lossless"] is True


def test_tensorboard_events_and_the_curve_are_written_once(runs):
    root = runs[0]
    from tensorboardX.proto import event_pb2

    files = list((root / "two" / "tensorboard").glob("events.out.tfevents.*"))
    assert len(files) == 1  # rank 0 alone
    scalars: dict[str, list[tuple[int, float]]] = {}
    raw = files[0].read_bytes()
    offset = 0
    while offset < len(raw):  # TFRecord framing: u64 length, u32 crc, data, u32 crc
        length = int.from_bytes(raw[offset:offset + 8], "little")
        event = event_pb2.Event.FromString(raw[offset + 12:offset + 12 + length])
        offset += 16 + length
        for value in event.summary.value:
            scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    assert [s for s, _ in scalars["train/loss"]] == list(range(1, STEPS + 1))
    _close([v for _, v in scalars["train/loss"]], _losses(root / "two"))
    assert [s for s, _ in scalars["eval/tau"]] == [3, 6] and "train/tokens_per_s" in scalars
    png = (root / "two" / "training.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_sharded_target_under_torchrun_resumes_on_one_process(runs):
    """torchrun itself starts the ranks (the console script as its training script), the target's decoder layers
    sharded; 3 steps there, 3 more in one process, and the curve is the uninterrupted single process's."""
    root, target, draft, data, single, _ = runs
    script = ROOT / ".venv/bin/dflash-check"
    if not script.exists():
        pytest.skip("needs the console script of an editable install in .venv")
    res = _run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--standalone",
                str(script), "train", str(target), "--draft", str(draft), "--data", str(data), "-o",
                str(root / "sharded"), "--steps", "3", "--batch-size", "2", "--shard-target", "always", *COMMON], root)
    assert res.returncode == 0, res.stderr[-3000:]
    state = json.loads((root / "sharded" / "checkpoint" / "state.json").read_text())
    assert state["step"] == 3 and state["global_batch"] == 4
    assert json.loads((root / "sharded" / "training.json").read_text())["target_sharded"] is True
    _close(_losses(root / "sharded"), [h["loss"] for h in single.history[:3]])
    lines: list[str] = []
    resumed = run_training(prepare(str(target), str(draft), str(data), str(root / "sharded"),
                                   TrainConfig(steps=STEPS, batch_size=4, **SETTINGS), resume=True,
                                   log=lines.append), progress=False, log=lines.append)
    _close([h["loss"] for h in resumed.history], [h["loss"] for h in single.history])
    assert not [line for line in lines if "global batch" in line]  # 2 x 2 then 4 x 1: the same global batch


def test_bad_data_under_torchrun_is_one_line_from_rank_zero(tmp_path):
    target, draft, _ = _pair(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"txt": 1}\n')
    script = ROOT / ".venv/bin/dflash-check"
    if not script.exists():
        pytest.skip("needs the console script of an editable install in .venv")
    res = _run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--standalone", str(script),
                "train", str(target), "--draft", str(draft), "--data", str(bad), "-o", str(tmp_path / "out"),
                "--device", "cpu"], tmp_path)
    assert res.returncode != 0
    errors = [line for line in res.stderr.splitlines() if line.startswith("dflash-check: error:")]
    assert len(errors) == 1 and "no string \"text\" field" in errors[0], res.stderr[-2000:]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args,message", [
    (["--nproc-per-node", "1"], "2 or more ranks"),
    (["--nproc-per-node", "0"], "2 or more ranks"),
    (["--nproc-per-node", "2", "--framework", "mlx"], "one process"),
    (["--shard-target", "always"], "2 or more ranks"),
])
def test_bad_rank_settings_are_one_line_before_torch(tmp_path, args, message):
    target, draft, data = _pair(tmp_path)
    probe = ("import sys, json\nfrom dflash_compat.cli.app import main\nsys.argv = ['dflash-check', *json.loads(sys.argv[1])]"
             "\ntry:\n    main()\nexcept SystemExit as e:\n    code = e.code\nprint('CODE', code, 'torch' in sys.modules,"
             " file=sys.stderr)\n")
    argv = ["train", str(target), "--draft", str(draft), "--data", str(data), "-o", str(tmp_path / "out"),
            "--device", "cpu", *args]
    res = subprocess.run([sys.executable, "-c", probe, json.dumps(argv)], capture_output=True, text=True,
                         timeout=HANG_GUARD_S, cwd=tmp_path)
    lines = res.stderr.strip().splitlines()
    assert lines[-1] == "CODE 2 False", res.stderr
    assert len(lines) == 2 and lines[0].startswith("dflash-check: error:") and message in lines[0], res.stderr
    assert not (tmp_path / "out").exists()


def test_ctrl_c_stops_every_rank_and_keeps_a_checkpoint(runs):
    """SIGINT to the launcher (what Ctrl-C sends it): the agent stops both ranks, rank 0 saves a checkpoint,
    the command says so in one line and exits 130, and no rank is left running."""
    root, target, draft, data, _, _ = runs
    out = root / "interrupted"
    cmd = [str(ROOT / ".venv/bin/dflash-check") if (ROOT / ".venv/bin/dflash-check").exists() else "dflash-check",
           "train", str(target), "--draft", str(draft), "--data", str(data), "-o", str(out), "--steps", "100000",
           "--batch-size", "2", "--nproc-per-node", "2", "--checkpoint-every", "0", *COMMON]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        seen = ""
        for line in proc.stderr:  # progress lines come at steps 1, 3, 10: interrupt once training runs
            seen += line
            if line.startswith("step 3/"):
                break
        proc.send_signal(signal.SIGINT)
        rest_out, rest_err = proc.communicate(timeout=HANG_GUARD_S)
    except BaseException:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    assert proc.returncode == 130, seen + rest_err
    assert rest_err.strip().splitlines()[-1].startswith("dflash-check: interrupted; a checkpoint is in")
    assert "Traceback" not in seen + rest_err and "death signal" not in rest_err
    assert json.loads((out / "checkpoint" / "state.json").read_text())["step"] >= 3
    assert not _left(out), _left(out)
