"""Training data as users have it, on the demo target (examples/demo, given a ChatML chat template here:
the demo's tokenizer has none): conversations rendered with the target's own template and trained on the
assistant's tokens only, read by our reader or through the `datasets` library (a data file, a save_to_disk
folder, streaming); the self-distillation step: the built-in runtime's answers (`--regenerate`), and the
prompts written for a serving engine's batch run (`--write-prompts`) joined with its answers (`--responses`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from dflash_compat.cli.app import cli

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo"
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
CONVERSATIONS = [
    [{"role": "system", "content": "You write Python."},
     {"role": "user", "content": f"Write a function number {i}."},
     {"role": "assistant", "content": f"def function_{i}(value):\n    return value + {i}\n"},
     {"role": "user", "content": "And a class?"},
     {"role": "assistant", "content": f"class Thing{i}:\n    def __init__(self):\n        self.size = {i}\n"}]
    for i in range(12)
]
TRAIN = ["--steps", "2", "--batch-size", "2", "--seq-len", "96", "--anchors", "16", "--eval-every", "0",
         "--device", "cpu", "--threads", "1"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo target with a chat template, its draft's config (random start), and chat data as JSONL."""
    root = tmp_path_factory.mktemp("chat")
    target = root / "target"
    shutil.copytree(DEMO / "target", target)
    config = json.loads((target / "tokenizer_config.json").read_text())
    (target / "tokenizer_config.json").write_text(json.dumps(dict(config, chat_template=CHATML)))
    draft = root / "draft"
    draft.mkdir()
    (draft / "config.json").write_text((DEMO / "draft" / "config.json").read_text())
    (root / "chats.jsonl").write_text("".join(json.dumps({"messages": c}) + "\n" for c in CONVERSATIONS))
    return root, target, draft


def _tokenizer(target):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(target))


def test_conversations_train_on_the_assistants_tokens(demo):
    pytest.importorskip("transformers")
    from dflash_compat.train import TrainConfig
    from dflash_compat.train.data import load_training_data, tokenize_training_data

    root, target, _ = demo
    tok = _tokenizer(target)
    docs = load_training_data(str(root / "chats.jsonl"), TrainConfig())
    assert docs == CONVERSATIONS
    tokens = tokenize_training_data(docs, tok, TrainConfig(held_out=0.25, seed=0), tok.eos_token_id)
    assert len(tokens.train) == 9 and len(tokens.held_out) == 3 and tokens.summary["conversations"] == 12
    for ids, mask in zip(tokens.train, tokens.train_masks):
        rendered = tok.decode(ids)
        assert rendered.startswith("<|im_start|>system\nYou write Python.<|im_end|>\n<|im_start|>user\n")
        trained = tok.decode([t for t, m in zip(ids, mask) if m])
        replies = [m["content"] for m in CONVERSATIONS[int(rendered.split("number ")[1].split(".")[0])]
                   if m["role"] == "assistant"]
        # exactly the replies and their end-of-turn marks: never the system, user or template text
        assert trained == "".join(f"{r}<|im_end|>\n" for r in replies)
    # the held-out prompts end with the template's generation prompt, before the first reply
    assert all(tok.decode(p).endswith("<|im_start|>assistant\n") for p in tokens.prompts())


def test_datasets_library_reads_files_folders_and_streams(demo, tmp_path):
    datasets = pytest.importorskip("datasets")
    from dflash_compat.train import TrainConfig
    from dflash_compat.train.data import DataSpec, load_training_data

    root = demo[0]
    from_file = load_training_data(DataSpec(dataset=str(root / "chats.jsonl")), TrainConfig())
    assert from_file == CONVERSATIONS
    sharegpt = [[{"from": "human" if m["role"] == "user" else "gpt", "value": m["content"]}
                 for m in c if m["role"] != "system"] for c in CONVERSATIONS]
    datasets.DatasetDict({"train": datasets.Dataset.from_dict({"conversations": sharegpt})}).save_to_disk(
        str(tmp_path / "saved"))
    saved = load_training_data(DataSpec(dataset=str(tmp_path / "saved")), TrainConfig())
    assert saved == [[m for m in c if m["role"] != "system"] for c in CONVERSATIONS]
    streamed = load_training_data(DataSpec(dataset=str(tmp_path / "saved"), streaming=True),
                                  TrainConfig(max_documents=3))
    assert streamed == saved[:3]


@pytest.mark.parametrize("args,message", [
    (["--dataset", "../../etc"], "no such file"),
    (["--dataset", "owner/name/extra"], "not a local path and not a Hugging Face dataset id"),
    (["--dataset", "x.parquet"], "no such file"),
    (["--streaming", "--data", "x.jsonl"], "--streaming reads a --dataset"),
    (["--data", "a.txt", "--dataset", "b"], "one of them"),
    ([], "one of them"),
])
def test_bad_data_options_are_one_line_before_torch(demo, tmp_path, args, message):
    import subprocess
    import sys

    root, target, draft = demo
    probe = ("import sys, json\nfrom dflash_compat.cli.app import main\nsys.argv = ['dflash-check', *json.loads(sys.argv[1])]"
             "\ntry:\n    main()\nexcept SystemExit as e:\n    code = e.code\nprint('CODE', code, 'torch' in sys.modules,"
             " 'datasets' in sys.modules, file=sys.stderr)\n")
    argv = ["train", str(target), "--draft", str(draft), "-o", str(tmp_path / "out"), *args]
    res = subprocess.run([sys.executable, "-c", probe, json.dumps(argv)], capture_output=True, text=True,
                         timeout=600, cwd=tmp_path)
    lines = res.stderr.strip().splitlines()
    assert lines[-1] == "CODE 2 False False", res.stderr
    assert len(lines) == 2 and message in lines[0], res.stderr


def test_chat_dataset_trains_and_a_template_less_target_is_refused(demo, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("datasets")
    root, target, draft = demo
    res = CliRunner().invoke(cli, ["train", str(target), "--draft", str(draft), "--dataset",
                                   str(root / "chats.jsonl"), "-o", str(tmp_path / "out"), *TRAIN])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "out" / "training.json").read_text())["data"]
    assert summary["conversations"] == 12 and 0 < summary["trained_tokens"] < summary["tokens"]
    res = CliRunner().invoke(cli, ["train", str(DEMO / "target"), "--draft", str(draft), "--data",
                                   str(root / "chats.jsonl"), "-o", str(tmp_path / "none"), *TRAIN])
    assert res.exit_code == 2 and "no chat template" in res.output and len(res.output.strip().splitlines()) == 1


def test_regenerate_answers_with_the_target_and_trains_on_them(demo, tmp_path):
    pytest.importorskip("torch")
    from dflash_compat.runtime.torch_generate import greedy_generate, load_target, stop_tokens_of

    root, target, draft = demo
    data = tmp_path / "few.jsonl"
    data.write_text("".join(json.dumps({"messages": c[:3]}) + "\n" for c in CONVERSATIONS[:6]))
    res = CliRunner().invoke(cli, ["train", str(target), "--draft", str(draft), "--data", str(data), "-o",
                                   str(tmp_path / "out"), "--regenerate", "--regenerate-tokens", "24", *TRAIN])
    assert res.exit_code == 0, res.output
    lines = [json.loads(line) for line in (tmp_path / "out" / "regenerated.jsonl").read_text().splitlines()]
    assert len(lines) == 6
    tok = _tokenizer(target)
    model = load_target(target)
    for conversation, line in zip(CONVERSATIONS[:6], lines):
        assert line["messages"][:2] == conversation[:2] and line["messages"][2]["role"] == "assistant"
        prompt = tok.apply_chat_template(conversation[:2], tokenize=False, add_generation_prompt=True)
        ids = tok(prompt, add_special_tokens=False)["input_ids"]
        expected = greedy_generate(model, ids, max_new_tokens=24, stop_token_ids=stop_tokens_of(model), timed=False)
        stops = set(stop_tokens_of(model))
        assert line["messages"][2]["content"] == tok.decode([t for t in expected.tokens if t not in stops])
        assert line["messages"][2]["content"] != conversation[2]["content"]  # the target's words, not the data's


def test_prompts_for_a_batch_engine_and_its_answers(demo, tmp_path):
    pytest.importorskip("torch")
    root, target, draft = demo
    prompts = tmp_path / "prompts.jsonl"
    res = CliRunner().invoke(cli, ["train", str(target), "--draft", str(draft), "--data", str(root / "chats.jsonl"),
                                   "--write-prompts", str(prompts), "--regenerate-tokens", "64"])
    assert res.exit_code == 0, res.output
    requests = [json.loads(line) for line in prompts.read_text().splitlines()]
    assert len(requests) == 12
    first = requests[0]
    # the fields of vLLM 0.34.0's BatchRequestInput (vllm/entrypoints/launchers/run_batch.py:176-200)
    assert set(first) == {"custom_id", "method", "url", "body"} and first["method"] == "POST"
    assert first["url"] == "/v1/chat/completions" and first["body"]["messages"] == CONVERSATIONS[0][:4]
    assert first["body"]["max_tokens"] == 64 and first["body"]["temperature"] == 0
    # answers as vLLM run-batch writes them (BatchRequestOutput: id, custom_id, response.body, error), one failed
    answers = tmp_path / "answers.jsonl"
    rows = [{"id": f"vllm-{i}", "custom_id": r["custom_id"], "error": None,
             "response": {"status_code": 200, "request_id": f"r{i}",
                          "body": {"choices": [{"index": 0, "message": {"role": "assistant",
                                                                        "content": f"class Answer{i}:\n    pass\n"}}]}}}
            for i, r in enumerate(requests[:-1])]
    rows.append({"id": "vllm-x", "custom_id": requests[-1]["custom_id"], "response": None, "error": "failed"})
    answers.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from dflash_compat.train import TrainConfig
    from dflash_compat.train.data import DataSpec, load_training_data

    docs = load_training_data(DataSpec(path=str(prompts), responses=str(answers)), TrainConfig())
    assert len(docs) == 11 and docs[0] == CONVERSATIONS[0][:4] + [{"role": "assistant",
                                                                   "content": "class Answer0:\n    pass\n"}]
    res = CliRunner().invoke(cli, ["train", str(target), "--draft", str(draft), "--data", str(prompts),
                                   "--responses", str(answers), "-o", str(tmp_path / "out"), *TRAIN])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "out" / "training.json").read_text())["data"]["conversations"] == 11
