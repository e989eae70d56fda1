"""The transformers judge engine (``engine=hf``) with three decodings.

``generate``  the paper's literal procedure: for every (image, scenario, ordering, seed)
              ``torch.manual_seed(seed)`` then ``model.generate(do_sample=True,
              temperature=T, max_new_tokens=16)`` on the full prompt (batch 1), decode the new
              tokens, parse. Rows: seed >= 1, response, choice, one-hot p_*, p_undecided 0.
              The encoded prompt is reused across its seeds (identical input). With
              ``seed_mode: literal`` (default) the torch seed is the paper's seed itself (1, 2, 3),
              as a script calling ``generate`` once per seed does; ``seed_mode: hashed`` seeds
              each call from sha256(seed, image_id, scenario_id, ordering) instead.
``exact``     prefix KV reuse + exact outcome distribution (:mod:`.exact`): one row per
              (image, scenario, ordering) with seed 0, response/choice NULL and
              p_pos + p_neg + p_invalid + p_undecided = 1. It replaces the K seeded responses
              by their expectation.
``sampled``   ``exact`` + K = len(seeds) draws per cell from that distribution, each seeded
              from sha256(seed, image_id, scenario_id, ordering): rows seed 1..K with the drawn
              ``choice``, a representative ``response`` (the most probable response text with
              that outcome) and the exact p_* repeated. Undecided (pruned) mass is drawn as
              ``invalid`` (the conservative reading: the parser never saw a valid answer), with
              response NULL.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image

from stylisticbias.benchmark import Benchmark, Ordering, ParserRules
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.base import ImageItem, JudgeEngine
from stylisticbias.judge.engines.hf.batch_sizing import AUTO, BatchSizes
from stylisticbias.judge.engines.hf.batch_sizing import choose as choose_batch_sizes
from stylisticbias.judge.engines.hf.exact import ExpandStats, expand_all, prefill, suffix_logits
from stylisticbias.judge.engines.hf.generation import Decoding, decode_response
from stylisticbias.judge.engines.hf.loading import load_model_and_processor, resolve_device
from stylisticbias.judge.engines.hf.preflight import check_hf_weights, warn_cpu
from stylisticbias.judge.engines.hf.prompts import image_token_id, split_prompts
from stylisticbias.judge.engines.hf.shared_prefix import (
    SharedPrefixCache,
    SharedPrefixUnsupported,
)
from stylisticbias.judge.engines.hf.shared_prefix import install as install_shared_prefix
from stylisticbias.judge.engines.hf.tasks import answer_tasks as answer_task_asks
from stylisticbias.judge.engines.hf.tasks import label_distributions as task_label_distributions
from stylisticbias.judge.protocol.distribution import Distribution
from stylisticbias.judge.protocol.outcomes import (
    COLUMNS,
    Outcome,
    PromptDistribution,
    exact_outcomes,
    stable_seed,
)
from stylisticbias.judge.protocol.parsing import letter_outcome, parse_response
from stylisticbias.judge.protocol.prompts import (
    PromptSpec,
    encode,
    prompt_specs,
    render_all,
    tokenize_text,
)
from stylisticbias.judge.protocol.settings import engine_settings
from stylisticbias.judge.protocol.tasks.asks import TaskAsk, TaskReply

log = logging.getLogger(__name__)


class HFJudgeEngine(JudgeEngine):
    """Forced-choice judgments with a transformers image-text-to-text model."""

    @classmethod
    def check_runnable(
        cls,
        model_cfg: Mapping[str, Any],
        engine_cfg: Mapping[str, Any],
        *,
        n_prompts: int | None = None,
        n_images: int | None = None,
    ) -> None:
        """The weights are on disk or the hub answers (:func:`~.preflight.check_hf_weights`);
        with ``n_images``, a large checkpoint bound for the CPU is warned about
        (:func:`~.preflight.warn_cpu`)."""
        check_hf_weights(model_cfg)
        if n_images:
            warn_cpu(model_cfg, engine_cfg, n_prompts=n_prompts, n_images=n_images)

    def __init__(
        self,
        model_cfg: Mapping[str, Any],
        engine_cfg: Mapping[str, Any],
        judge_cfg: Mapping[str, Any],
        benchmark: Benchmark,
    ) -> None:
        if "max_branches" in engine_cfg:
            raise StylisticBiasError(
                "engine.max_branches was replaced by engine.max_branches_per_suffix (the live "
                "branches per suffix; the frontier is at most suffix_batch_size x that)"
            )
        super().__init__(model_cfg, engine_cfg, judge_cfg, benchmark)
        #: the engine section typed and checked (keys it leaves out: ``conf/engine/hf.yaml``)
        self.spec = spec = engine_settings(engine_cfg, "hf")
        self.decoding = spec.decoding
        self.seed_mode = spec.seed_mode
        self.seeds = list(self.settings.seeds)  # >= 1 (0 marks exact rows): the judge spec
        self.specs: list[PromptSpec] = prompt_specs(
            benchmark,
            self.judge_cfg["orderings"],
            self.judge_cfg.get("scenarios"),
        )
        self.decoding_params = Decoding(
            temperature=self.settings.temperature,
            max_new_tokens=self.settings.max_new_tokens,
            prune_threshold=spec.prune_threshold,
            branch_batch_size=_size(spec.branch_batch_size),
            max_branches_per_suffix=spec.max_branches_per_suffix,
            parser=benchmark.parser,
        )
        self.suffix_batch_size = _size(spec.suffix_batch_size)
        # "auto" sizes (0 above) are chosen from free memory at the first image
        self._auto_sizes = {
            k for k in ("suffix_batch_size", "branch_batch_size") if getattr(spec, k) == AUTO
        }
        self.batch_sizes: BatchSizes | None = None
        self.suffix_padding = spec.suffix_padding
        self.prefix_sharing = spec.prefix_sharing
        self._shared_ok: bool | None = None  # None: not yet verified on this model
        # called before each phase-clock read (profiling: torch.cuda.synchronize); None: async
        self.profile_sync: Callable[[], None] | None = None
        self.chat_template_kwargs = dict(self.model_cfg.get("chat_template_kwargs") or {})
        self.model: Any = None
        self.processor: Any = None
        self.device = "cpu"
        self.last_stats: dict[str, Any] = {}
        self._rendered: list[str] | None = None
        self._text_tokens: list[list[int]] | None = None  # tokens of the rendered prompts

    # ---- setup -------------------------------------------------------------------------------
    def setup(self, device: str = "cpu") -> None:
        """Load model and processor (``engine.device`` overrides ``device`` unless ``auto``)."""
        if self.model is not None:
            return
        want = self.spec.device
        self.device = resolve_device(device if want in (None, "auto") else want)
        root = self.spec.root
        self.model, self.processor = load_model_and_processor(
            self.model_cfg, self.device, Path(root) if root else None
        )
        self._rendered = render_all(self.processor, self.specs, self.chat_template_kwargs)
        self._text_tokens = None

    def run_params(self) -> dict[str, Any]:
        """MLflow parameters: the base set + model source and exact-decoding settings."""
        out = super().run_params()
        out.update(
            {
                "hub_id": self.model_cfg.get("hub_id"),
                "revision": self.model_cfg.get("revision"),
                "dtype": self.model_cfg.get("dtype"),
                "max_new_tokens": self.decoding_params.max_new_tokens,
                "prune_threshold": self.decoding_params.prune_threshold,
                "seed_mode": self.seed_mode,
                "prefix_sharing": self.prefix_sharing,
                "suffix_padding": self.suffix_padding,
            }
        )
        return out

    # ---- judging -----------------------------------------------------------------------------
    def judge(
        self, items: Sequence[ImageItem], images: Sequence[Image.Image | None]
    ) -> pd.DataFrame:
        """JUDGMENTS rows for every (image x scenario x ordering [x seed])."""
        import torch

        if self.model is None:
            self.setup(self.device)
        t0 = time.perf_counter()
        stats = ExpandStats(sync=self.profile_sync)
        rows: list[dict[str, Any]] = []
        image_tokens: list[int] = []
        undecided: list[float] = []
        with torch.inference_mode():
            for item, img in zip(items, images):
                if img is None:
                    raise StylisticBiasError(f"image {item.image_id}: no pixels given to hf engine")
                img = img.convert("RGB")
                if self.decoding == "generate":
                    outcomes, n_img = self.decode_generate(item, img)
                else:
                    outcomes, n_img = self.decode_exact(item, img, stats)
                    undecided.extend(o.p_undecided for os_ in outcomes for o in os_ if o.seed <= 1)
                for spec, os_ in zip(self.specs, outcomes):
                    rows.extend(self._row(item, spec, o) for o in os_)
                image_tokens.append(n_img)
        self.last_stats = {
            "images": len(items),
            "prompts": len(items) * len(self.specs),
            "image_tokens_per_image": image_tokens,
            "undecided_mass_mean": float(np.mean(undecided)) if undecided else 0.0,
            "undecided_mass_max": float(np.max(undecided)) if undecided else 0.0,
            "forward_calls": stats.forward_calls,
            "host_syncs": stats.host_syncs,
            "phase_s": dict(stats.phase_s),
            "calls": list(stats.calls),
            "branch_rows": stats.branch_rows,
            "capped_mass": stats.capped_mass,
            "seconds": time.perf_counter() - t0,
        }
        return pd.DataFrame(rows, columns=COLUMNS)

    def _row(self, item: ImageItem, spec: PromptSpec, outcome: Outcome) -> dict[str, Any]:
        """The JUDGMENTS row of one decoded cell."""
        return {
            "image_id": item.image_id,
            "face_id": item.face_id,
            "model": self.model_name,
            "engine": "hf",
            "decoding": self.decoding,
            "scenario_id": spec.scenario.id,
            "ordering": spec.ordering.id,
            **outcome.columns(),
            "simulated": False,
        }

    def torch_seed(self, seed: int, image_id: str, scenario_id: int, ordering: int) -> int:
        """The ``torch.manual_seed`` value of one generate call (see module doc)."""
        if self.seed_mode == "literal":
            return seed
        return stable_seed(seed, image_id, scenario_id, ordering)

    def generate_one(self, enc: Any, torch_seed: int) -> str:
        """One literal ``generate`` call (batch 1) and its decoded response."""
        import torch

        torch.manual_seed(torch_seed)
        out = self.model.generate(**enc, **self.decoding_params.generate_kwargs())
        return decode_response(
            self.processor.tokenizer, out[0, enc["input_ids"].shape[1] :].tolist()
        )

    def encode_prompt(self, text: str, img: Image.Image, system: str = "") -> Any:
        """The processor's model inputs of one prompt (with its ``system`` turn, if any), on
        the model's device/dtype."""
        enc = encode(self.processor, text, img, self.chat_template_kwargs, system)
        enc = enc.to(self.model.device)
        if "pixel_values" in enc and enc["pixel_values"].is_floating_point():
            enc["pixel_values"] = enc["pixel_values"].to(self.model.dtype)
        return enc

    def decode_generate(self, item: ImageItem, img: Image.Image) -> tuple[list[list[Outcome]], int]:
        """``generate`` decoding: per prompt (``self.specs`` order) one outcome per seed."""
        rows: list[list[Outcome]] = []
        n_img = 0
        for spec in self.specs:
            enc = self.encode_prompt(spec.text, img)
            if not n_img:
                tid = image_token_id(self.model, self.processor)
                n_img = int((enc["input_ids"][0] == tid).sum()) if tid is not None else 0
            cell = []
            for seed in self.seeds:
                text = self.generate_one(
                    enc, self.torch_seed(seed, item.image_id, spec.scenario.id, spec.ordering.id)
                )
                choice = letter_outcome(parse_response(text, self.benchmark.parser), spec.ordering)
                cell.append(Outcome.sampled_text(seed, text, choice))
            rows.append(cell)
        return rows, n_img

    def distributions(
        self, img: Image.Image, stats: ExpandStats | None = None
    ) -> tuple[list[PromptDistribution], int]:
        """Exact outcome distributions of every prompt of one image (in ``self.specs`` order).

        Each: ``p`` (positive/negative/invalid/undecided) and ``best`` (outcome ->
        representative response text); and the image's token count.
        """
        assert self._rendered is not None
        if self._text_tokens is None:  # image-independent: tokenised once per engine
            self._text_tokens = [tokenize_text(self.processor, r) for r in self._rendered]
        stats = stats if stats is not None else ExpandStats()
        t = stats.clock()
        prompts = split_prompts(
            self.model,
            self.processor,
            img,
            [s.text for s in self.specs],
            self._rendered,
            self.chat_template_kwargs,
            text_tokens=self._text_tokens,
        )
        prompts.prefix_inputs = {
            k: v.to(self.model.device) if hasattr(v, "to") else v
            for k, v in prompts.prefix_inputs.items()
        }
        t = stats.add("preprocess", t)
        if self._auto_sizes and self.batch_sizes is None:
            self._choose_batch_sizes(max(len(x) for x in prompts.suffixes))
        cache = prefill(self.model, prompts.prefix_inputs)
        stats.add("prefill", t)
        stats.forward_calls += 1
        stats.calls.append(("prefill", 1, len(prompts.prefix_ids)))
        run = partial(
            expand_all,
            self.model,
            self.processor.tokenizer,
            prompts=prompts,
            decoding=self.decoding_params,
            suffix_batch_size=self.suffix_batch_size,
            stats=stats,
            padding=self.suffix_padding,
        )
        shared = self._shared_template(cache, prompts)
        try:
            dists = run(prefix_cache=shared if shared is not None else cache)
        except SharedPrefixUnsupported as exc:
            self._disable_sharing(str(exc))
            dists = run(prefix_cache=cache)
        out = []
        for spec, d in zip(self.specs, dists):
            mass, und = d.normalised()
            p = _poles(mass, spec.ordering)
            p["undecided"] = und
            best = {
                spec.ordering.pole_of(v) if v in spec.ordering.letters else "invalid": t
                for v, (_, t) in sorted(d.best.items(), key=lambda kv: kv[1][0])
            }
            out.append(PromptDistribution(p, best))
        return out, prompts.image_tokens

    def decode_exact(
        self, item: ImageItem, img: Image.Image, stats: ExpandStats
    ) -> tuple[list[list[Outcome]], int]:
        """``exact`` / ``sampled`` decoding: per prompt the seed-0 outcome or one draw per seed."""
        dists, n_img = self.distributions(img, stats)
        iid = item.image_id
        return [
            exact_outcomes(d, self.decoding, self.seeds, iid, s.scenario.id, s.ordering.id)
            for s, d in zip(self.specs, dists)
        ], n_img

    def label_distributions(
        self, img: Image.Image | Sequence[Image.Image], texts: Sequence[str], rules: ParserRules
    ) -> list[Distribution]:
        """Exact distributions over a task's labels (``choice_k``: all k options) of prompts
        about one image, or several in one prompt (a list: pairwise)
        (:func:`~stylisticbias.judge.engines.hf.tasks.label_distributions`)."""
        if self.model is None:
            self.setup(self.device)
        return task_label_distributions(self, img, texts, rules)

    def answer_tasks(self, asks: Sequence[TaskAsk]) -> list[TaskReply]:
        """Task prompts answered (:func:`~stylisticbias.judge.engines.hf.tasks.answer_tasks`)."""
        import torch

        if self.model is None:
            self.setup(self.device)
        with torch.inference_mode():
            return answer_task_asks(self, asks)

    def _choose_batch_sizes(self, width: int) -> None:
        """Resolve ``auto`` batch sizes from free memory (:mod:`~.batch_sizing`), once."""
        self.batch_sizes = choose_batch_sizes(
            self.model, width, self.decoding_params.max_new_tokens, suffix_cap=len(self.specs)
        )
        if "suffix_batch_size" in self._auto_sizes:
            self.suffix_batch_size = self.batch_sizes.suffix_batch_size
        if "branch_batch_size" in self._auto_sizes:
            self.decoding_params = replace(
                self.decoding_params, branch_batch_size=self.batch_sizes.branch_batch_size
            )

    # ---- shared prefix -----------------------------------------------------------------------
    def _shared_template(self, cache: Any, prompts: Any) -> SharedPrefixCache | None:
        """The shared-prefix template for this image, or ``None`` for the per-row copy path.

        The first image of a model is checked once: its logits on a few suffixes must equal the
        copy path's, else sharing is disabled (logged).
        """
        import torch

        if self.prefix_sharing != "shared" or self._shared_ok is False:
            return None
        if self._shared_ok is None and not install_shared_prefix(self.model):
            self._shared_ok = False
            return None
        total = (
            len(prompts.prefix_ids)
            + max(len(s) for s in prompts.suffixes)
            + self.decoding_params.max_new_tokens
        )
        try:
            shared = SharedPrefixCache.from_prefix(cache, total)
            if self._shared_ok is None:
                sfx = [prompts.suffixes[0]]
                want = suffix_logits(self.model, cache, sfx)
                got = suffix_logits(self.model, shared, sfx)
                tol = 1e-3 if self.model.dtype == torch.float32 else 5e-2
                err = float((got - want).abs().max())
                if not err <= tol * max(1.0, float(want.abs().max())):
                    raise SharedPrefixUnsupported(f"logits differ from the copy path by {err:.2e}")
                self._shared_ok = True
        except SharedPrefixUnsupported as exc:
            self._disable_sharing(str(exc), permanent=self._shared_ok is None)
            return None
        return shared

    def _disable_sharing(self, why: str, permanent: bool = True) -> None:
        log.info("prefix sharing off for %s (%s): per-row prefix copy", self.model_name, why)
        if permanent:
            self._shared_ok = False


def _size(value: int | str) -> int:
    """A batch size of the engine spec (an integer >= 1 or ``auto``); ``auto`` -> 0 (chosen
    later from free memory)."""
    return 0 if value == AUTO else int(value)


def _poles(mass: Mapping[str, float], ordering: Ordering) -> dict[str, float]:
    """Letter masses -> pole masses under ``ordering``."""
    return {
        "positive": mass[ordering.letter_of("positive")],
        "negative": mass[ordering.letter_of("negative")],
        "invalid": mass["invalid"],
    }
