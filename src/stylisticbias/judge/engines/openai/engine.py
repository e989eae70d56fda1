"""The ``openai`` judge engine: any OpenAI-compatible chat-completions server.

Decodings (the ``hf`` engine's three, same rows and columns; ``engine`` is ``openai``):

``generate``  the literal protocol: one request per (image, scenario, ordering, seed) with
              ``seed``, temperature T and ``max_new_tokens``; the answer is parsed by the shared
              parser. A refusal/content-filter answer is recorded as ``invalid`` with the
              reason as its response text (``[refused: ...]``), and never re-asked.
``exact``     from the server's next-token log-probabilities, tempered to T and expanded with
              assistant prefill (:mod:`.exact`); one row per (image, scenario, ordering) with
              seed 0 and p_pos + p_neg + p_invalid + p_undecided = 1. A server without
              log-probabilities or prefill gets a one-line error, unless the engine config says
              ``exact_fallback: generate``.
``sampled``   K = len(seeds) seeded draws per cell from the ``exact`` distribution (as ``hf``);
              on a server without log-probabilities, K seeded requests to the server.

Every response goes through the :class:`~.cache.ResponseCache` (a rerun sends no requests)
and the :class:`~.transport.Transport` (concurrency, retries, rate limits). With
``endpoint.batch`` the stage first fills the cache through provider batch jobs
(:meth:`OpenAIJudgeEngine.prefetch`; a task protocol's asks:
:meth:`~OpenAIJudgeEngine.prefetch_tasks`; :mod:`.batch`) and then judges from it, sending
nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from PIL import Image

from stylisticbias.benchmark import Benchmark, Ordering, ParserRules
from stylisticbias.config import project_root
from stylisticbias.errors import StylisticBiasError
from stylisticbias.judge.engines.base import ImageItem, JudgeEngine
from stylisticbias.judge.engines.openai.batch import BatchRunner, Collector, Missing, gather_all
from stylisticbias.judge.engines.openai.cache import ResponseCache
from stylisticbias.judge.engines.openai.cost import Estimate
from stylisticbias.judge.engines.openai.cost import estimate as estimate_run
from stylisticbias.judge.engines.openai.exact import (
    ExactSettings,
    TextDistribution,
    expand_texts,
    split_batch,
)
from stylisticbias.judge.engines.openai.preflight import check_served_endpoint
from stylisticbias.judge.engines.openai.requests import EncodedImage, RequestBuilder, encode_image
from stylisticbias.judge.engines.openai.spec import EndpointSpec, endpoint_spec, transport_spec
from stylisticbias.judge.engines.openai.tasks import answer_tasks as answer_task_asks
from stylisticbias.judge.engines.openai.tasks import answer_tasks_async, run_label_distributions
from stylisticbias.judge.engines.openai.transport import (
    ApiRequest,
    Transport,
    TransportStats,
    gather_or_cancel,
)
from stylisticbias.judge.protocol.outcomes import COLUMNS, draw_outcomes
from stylisticbias.judge.protocol.parsing import letter_outcome, parse_response
from stylisticbias.judge.protocol.prompts import PromptSpec, prompt_specs
from stylisticbias.judge.protocol.settings import engine_settings
from stylisticbias.judge.protocol.tasks.asks import TaskAsk, TaskReply

log = logging.getLogger(__name__)

DEFAULT_CACHE = ".cache/api-responses.sqlite"
#: images whose missing requests are collected at a time (batch mode; bounds memory)
DISCOVER_CHUNK = 64
#: task asks whose missing requests are collected at a time (batch mode; bounds memory)
TASK_DISCOVER_CHUNK = 256
#: exact mode's path-sampling temperature on servers with raw log-probabilities, where it
#: changes which partial answers are seen and never the probabilities read
RAW_EXPLORE_TEMPERATURE = 1.0


def exact_unavailable(endpoint: EndpointSpec) -> str | None:
    """Why ``exact`` cannot run on this endpoint (None when it can)."""
    caps = endpoint.capabilities
    if not caps.logprobs:
        return "the server returns no log-probabilities (endpoint.capabilities.logprobs: false)"
    if caps.assistant_prefill == "none":
        return (
            "the server cannot continue a partial answer (endpoint.capabilities."
            "assistant_prefill: none)"
        )
    return None


class OpenAIJudgeEngine(JudgeEngine):
    """Forced-choice judgments through an OpenAI-compatible chat-completions endpoint."""

    @classmethod
    def check_runnable(
        cls,
        model_cfg: Mapping[str, Any],
        engine_cfg: Mapping[str, Any],
        *,
        n_prompts: int | None = None,
        n_images: int | None = None,
    ) -> None:
        """The API key is set and the endpoint answers (:func:`check_served_endpoint`)."""
        check_served_endpoint(model_cfg)

    def __init__(
        self,
        model_cfg: Mapping[str, Any],
        engine_cfg: Mapping[str, Any],
        judge_cfg: Mapping[str, Any],
        benchmark: Benchmark,
    ) -> None:
        super().__init__(model_cfg, engine_cfg, judge_cfg, benchmark)
        #: the engine section typed and checked (keys it leaves out: ``conf/engine/openai.yaml``)
        self.spec = spec = engine_settings(engine_cfg, "openai")
        self.endpoint = endpoint_spec(self.model_cfg)
        if self.endpoint.batch.enabled and self.endpoint.capabilities.batch_chat:
            # a batch line is one conversation: vLLM's several-conversation endpoint is not
            # a batch-job endpoint
            log.info(
                "%s: batch jobs ask one partial answer per line (capabilities.batch_chat unused)",
                self.model_name,
            )
            caps = dataclasses.replace(self.endpoint.capabilities, batch_chat=False)
            self.endpoint = dataclasses.replace(self.endpoint, capabilities=caps)
        self.transport = transport_spec(self.engine_cfg, self.endpoint)
        self.requested = spec.decoding
        fallback = spec.exact_fallback
        why = exact_unavailable(self.endpoint)
        self.decoding = self.requested
        self.use_exact = self.requested in ("exact", "sampled") and why is None
        if self.requested == "exact" and why:
            if fallback != "generate":
                raise StylisticBiasError(
                    f"{self.endpoint.source}: decoding exact needs log-probabilities and "
                    f"assistant prefill, but {why}; use engine.decoding=generate, or set "
                    "engine.exact_fallback: generate"
                )
            log.warning(
                "%s: exact unavailable (%s): falling back to generate", self.model_name, why
            )
            self.decoding = "generate"
        elif self.requested == "sampled" and why:
            log.info("%s: %s; sampled draws come from the server", self.model_name, why)
        self.seeds = list(self.settings.seeds)  # >= 1 (0 marks exact rows): the judge spec
        self.specs: list[PromptSpec] = prompt_specs(
            benchmark,
            self.judge_cfg["orderings"],
            self.judge_cfg.get("scenarios"),
        )
        caps = self.endpoint.capabilities
        temperature = self.settings.temperature
        max_new = self.settings.max_new_tokens
        top_k = min(spec.top_logprobs, caps.max_top_logprobs)
        paths = max(0, int(spec.exact_paths))
        explore = spec.explore_temperature
        if explore is None and caps.logprobs_mode == "raw":
            explore = RAW_EXPLORE_TEMPERATURE
        if explore is not None and caps.logprobs_mode == "processed" and explore != temperature:
            raise StylisticBiasError(
                f"{self.endpoint.source}: engine.explore_temperature={explore} needs raw "
                "log-probabilities, but the server tempers them (capabilities.logprobs_mode: "
                "processed); leave engine.explore_temperature null"
            )
        self.exact = ExactSettings(
            temperature=temperature,
            max_new_tokens=max_new,
            prune_threshold=spec.prune_threshold,
            max_branches_per_suffix=spec.max_branches_per_suffix,
            top_logprobs=top_k,
            logprobs_mode=caps.logprobs_mode,
            eos_tokens=caps.eos_tokens,
            vocab_size=caps.vocab_size,
            parser=benchmark.parser,
            undecided_target=spec.undecided_target,
            paths_per_request=min(paths, max(1, caps.max_choices)),
            path_tokens=max_new if paths else 1,
            explore_temperature=explore,
        )
        self.builder = RequestBuilder(self.endpoint, temperature, max_new)
        cache = Path(str(spec.cache or DEFAULT_CACHE))
        self.cache_path = cache if cache.is_absolute() else project_root() / cache
        self._cache: ResponseCache | None = None
        self.stats = TransportStats()
        self.last_stats: dict[str, Any] = {}
        #: what the batch jobs did (reported with the next judged batch's ``last_stats``)
        self._batch_stats: dict[str, Any] = {}
        self._bar: Any = None
        self._t_start = 0.0
        self.progress = spec.progress

    # ---- bookkeeping -------------------------------------------------------------------------
    def cells_per_image(self) -> int:
        """Rows per image (prompts x seeds, or prompts for exact)."""
        return len(self.specs) * (1 if self.decoding == "exact" else len(self.seeds))

    def plan(self, items: Sequence[ImageItem]) -> None:
        """Open the progress bar for the images this run will judge (ETA over cells)."""
        if not self.progress:
            return
        from tqdm.auto import tqdm

        self._bar = tqdm(
            total=len(items) * self.cells_per_image(),
            unit="cell",
            desc=f"judge {self.model_name} via {self.endpoint.host}",
            dynamic_ncols=True,
            mininterval=0.5,
        )
        self._t_start = time.perf_counter()

    def _tick_cells(self, n: int) -> None:
        if self._bar is None:
            return
        elapsed = max(time.perf_counter() - self._t_start, 1e-9)
        self._bar.set_postfix(
            req_s=f"{self.stats.requests / elapsed:.1f}",
            cached=self.stats.cached,
            retries=self.stats.retries,
            refresh=False,
        )
        self._bar.update(n)

    @property
    def cache(self) -> ResponseCache:
        """The response cache (opened on first use)."""
        if self._cache is None:
            self._cache = ResponseCache(self.cache_path)
        return self._cache

    def cost_usd(self, stats: TransportStats | None = None) -> float:
        """Cost of the requests actually sent (cache hits cost nothing)."""
        s = stats or self.stats
        return self.endpoint.prices.cost(s.prompt_tokens, s.completion_tokens)

    def estimate(self, items: Sequence[ImageItem]) -> Estimate:
        """Dry run: the :class:`~.cost.Estimate` of judging ``items`` (nothing is sent)."""
        return estimate_run(self, items)

    def fingerprint(self) -> dict[str, Any]:
        """What determines the records beyond the configs (the effective decoding)."""
        return {"decoding": self.decoding, "use_exact": self.use_exact}

    def run_params(self) -> dict[str, Any]:
        """MLflow parameters: the base set + endpoint host, served model, backend."""
        out = super().run_params()
        out.update(
            {
                "decoding": self.decoding,
                "endpoint_host": self.endpoint.host,
                "served_model": self.endpoint.served_model,
                "backend": self.endpoint.backend,
                "max_new_tokens": self.exact.max_new_tokens,
                "prune_threshold": self.exact.prune_threshold,
                "top_logprobs": self.exact.top_logprobs,
                "exact_paths": self.exact.paths_per_request,
                "undecided_target": self.exact.undecided_target,
                "logprobs_mode": self.exact.logprobs_mode,
            }
        )
        return out

    # ---- judging -----------------------------------------------------------------------------
    def judge(
        self, items: Sequence[ImageItem], images: Sequence[Image.Image | None]
    ) -> pd.DataFrame:
        """JUDGMENTS rows for every (image x scenario x ordering [x seed])."""
        t0 = time.perf_counter()
        before = self.stats.as_dict()
        rows = asyncio.run(self._judge_async(items))
        delta = {k: v - before.get(k, 0) for k, v in self.stats.as_dict().items()}
        delta_cost = self.endpoint.prices.cost(
            delta["api_prompt_tokens"], delta["api_completion_tokens"]
        )
        self.last_stats = {
            "images": len(items),
            "prompts": len(items) * len(self.specs),
            **delta,
            "api_cost_usd": delta_cost,
            "seconds": time.perf_counter() - t0,
        }
        for k, v in self._batch_stats.items():  # the batch jobs (and lines sent online) before
            self.last_stats[k] = self.last_stats.get(k, 0) + v
        self._batch_stats = {}
        if self._bar is not None and self._bar.n >= (self._bar.total or 0):
            self._bar.close()
        return pd.DataFrame(rows, columns=COLUMNS)

    # ---- batch jobs --------------------------------------------------------------------------
    def prefetch(self, items: Sequence[ImageItem], out: str | Path) -> None:
        """With ``endpoint.batch`` enabled: ask every request judging ``items`` needs through
        provider batch jobs (:class:`~.batch.BatchRunner`; jobs recorded in ``out/batch/``),
        so that :meth:`judge` then finds every response in the cache. Nothing otherwise."""
        if not self.endpoint.batch.enabled or not items:
            return
        self._batch_stats = self._batch_jobs(lambda: self.missing_requests(items), out)

    def prefetch_tasks(self, asks: Sequence[TaskAsk], out: str | Path) -> dict[str, Any]:
        """:meth:`prefetch` for task asks: with ``endpoint.batch`` enabled, every request
        :meth:`answer_tasks` needs for ``asks`` is asked through batch jobs (ledger in
        ``out/batch/``), so that it then answers them all from the cache, sending nothing.
        Returns what the jobs did (``api_batch_*`` and the lines sent online; empty when
        nothing was to do)."""
        if not self.endpoint.batch.enabled or not asks:
            return {}
        return self._batch_jobs(lambda: self.missing_task_requests(asks), out)

    def _batch_jobs(
        self, discover: Callable[[], Iterable[ApiRequest]], out: str | Path
    ) -> dict[str, Any]:
        """Run the batch jobs of ``discover``'s requests; their stats and those sent online."""
        runner = BatchRunner(
            self.endpoint,
            self.transport,
            self.cache,
            Path(out) / "batch",
            online=self.fetch_online,
            label=self.model_name,
        )
        before = self.stats.as_dict()
        stats = runner.run(discover)
        sent = {k: v - before.get(k, 0) for k, v in self.stats.as_dict().items()}  # online
        log.info(
            "%s: batch jobs %s: %d line(s) submitted, %d answered, %d failed, %d sent "
            "online; %d prompt + %d completion tokens%s",
            self.model_name,
            ", ".join(stats.batch_ids) or "(none new)",
            stats.lines,
            stats.done,
            stats.failed,
            stats.online,
            stats.prompt_tokens,
            stats.completion_tokens,
            "" if stats.cost_usd is None else f", ${stats.cost_usd:,.4f}",
        )
        sent["api_cost_usd"] = self.endpoint.prices.cost(
            sent["api_prompt_tokens"], sent["api_completion_tokens"]
        )
        return {**sent, **stats.as_dict()}

    def missing_task_requests(self, asks: Sequence[TaskAsk]) -> Iterator[ApiRequest]:
        """The requests answering ``asks`` needs next that the cache does not hold (every
        ``generate`` one, the next round of each exact distribution; nothing is sent)."""
        for i in range(0, len(asks), TASK_DISCOVER_CHUNK):
            chunk = asks[i : i + TASK_DISCOVER_CHUNK]
            col = Collector(self.cache)
            with contextlib.suppress(Missing):  # recorded in col first (gather_all)
                asyncio.run(answer_tasks_async(self, col, chunk, gather_all))
            yield from col.requests.values()

    def missing_requests(self, items: Sequence[ImageItem]) -> Iterator[ApiRequest]:
        """The requests judging ``items`` needs next that the cache does not hold: every one of
        ``generate``, the next round of ``exact`` (nothing is sent)."""
        for i in range(0, len(items), DISCOVER_CHUNK):
            yield from asyncio.run(self._discover(items[i : i + DISCOVER_CHUNK]))

    async def _discover(self, items: Sequence[ImageItem]) -> list[ApiRequest]:
        col = Collector(self.cache)
        bar, self._bar = self._bar, None  # judging from the cache here counts no cells
        try:
            got = await asyncio.gather(
                *(self._judge_image(col, it) for it in items),  # type: ignore[arg-type]
                return_exceptions=True,
            )
        finally:
            self._bar = bar
        for res in got:
            if isinstance(res, BaseException) and not isinstance(res, Missing):
                raise res
        return list(col.requests.values())

    def fetch_online(self, reqs: Sequence[ApiRequest]) -> None:
        """Send ``reqs`` through the online transport (their results cached)."""

        async def go() -> None:
            async with Transport(self.endpoint, self.transport, self.cache, self.stats) as tr:
                await gather_or_cancel(*(tr.fetch(r) for r in reqs))

        asyncio.run(go())

    async def _judge_async(self, items: Sequence[ImageItem]) -> list[dict[str, Any]]:
        async with Transport(self.endpoint, self.transport, self.cache, self.stats) as tr:
            per_image = await gather_or_cancel(*(self._judge_image(tr, it) for it in items))
        return [r for rows in per_image for r in rows]

    async def _judge_image(self, tr: Transport, item: ImageItem) -> list[dict[str, Any]]:
        img = await asyncio.to_thread(encode_image, item.path)
        if self.use_exact:
            return await self._judge_exact(tr, item, img)
        return await self._judge_generate(tr, item, img)

    def _row(self, item: ImageItem, spec: PromptSpec, seed: int) -> dict[str, Any]:
        return {
            "image_id": item.image_id,
            "face_id": item.face_id,
            "model": self.model_name,
            "engine": "openai",
            "decoding": self.decoding,
            "scenario_id": spec.scenario.id,
            "ordering": spec.ordering.id,
            "seed": seed,
            "response": None,
            "choice": None,
            "simulated": False,
        }

    async def _judge_generate(
        self, tr: Transport, item: ImageItem, img: EncodedImage
    ) -> list[dict[str, Any]]:
        cells = [(spec, seed) for spec in self.specs for seed in self.seeds]

        async def one(spec: PromptSpec, seed: int) -> dict[str, Any]:
            res = await tr.fetch(self.builder.generate(img, spec.text, seed))
            row = self._row(item, spec, seed)
            if res.get("refusal"):
                text, choice = f"[refused: {res['refusal']}]", "invalid"
            else:
                text = res.get("content")
                choice = letter_outcome(parse_response(text, self.benchmark.parser), spec.ordering)
            row.update(response=text, choice=choice, **_one_hot(choice))
            self._tick_cells(1)
            return row

        return await gather_or_cancel(*(one(s, k) for s, k in cells))

    async def distributions(self, tr: Transport, img: EncodedImage) -> list[TextDistribution]:
        """Exact verdict distributions of every prompt of one image (``self.specs`` order)."""

        async def fetch(k: int, prefix: str) -> dict[str, Any]:
            ex = self.exact
            req = self.builder.logprobs(
                img,
                self.specs[k].text,
                prefix,
                ex.top_logprobs,
                paths=ex.request_paths,
                temperature=ex.explore_temperature,
            )
            return await tr.fetch(req)

        async def fetch_batch(k: int, prefixes: Sequence[str]) -> list[dict[str, Any]]:
            ex = self.exact
            req = self.builder.logprobs_batch(
                [img],
                self.specs[k].text,
                prefixes,
                ex.top_logprobs,
                temperature=ex.explore_temperature,
            )
            return split_batch(await tr.fetch(req), len(prefixes))

        batch = fetch_batch if self.endpoint.capabilities.batch_chat else None
        return await expand_texts(len(self.specs), fetch, self.exact, gather_or_cancel, batch)

    def label_distributions(
        self, path: str | Sequence[str], texts: Sequence[str], rules: ParserRules
    ) -> list[TextDistribution]:
        """Exact distributions over a task's labels (``choice_k``: all k options) of prompts
        about the image file ``path`` (or several files in one prompt, a list: pairwise),
        from the server's top log-probabilities
        (:mod:`~stylisticbias.judge.engines.openai.tasks`)."""
        imgs = [encode_image(p) for p in ([path] if isinstance(path, str) else path)]
        return run_label_distributions(self, imgs, texts, rules)

    def answer_tasks(self, asks: Sequence[TaskAsk]) -> list[TaskReply]:
        """Task prompts answered (:func:`~stylisticbias.judge.engines.openai.tasks.answer_tasks`);
        every response goes through the response cache."""
        return answer_task_asks(self, asks)

    async def _judge_exact(
        self, tr: Transport, item: ImageItem, img: EncodedImage
    ) -> list[dict[str, Any]]:
        dists = await self.distributions(tr, img)
        rows = []
        for spec, d in zip(self.specs, dists):
            mass, und = d.normalised()
            p = _poles(mass, spec.ordering)
            probs = {
                "p_pos": p["positive"],
                "p_neg": p["negative"],
                "p_invalid": p["invalid"],
                "p_undecided": und,
            }
            if self.decoding == "exact":
                row = self._row(item, spec, 0)
                row.update(probs)
                rows.append(row)
                continue
            best = {
                spec.ordering.pole_of(v) if v in spec.ordering.letters else "invalid": t
                for v, (_, t) in sorted(d.best.items(), key=lambda kv: kv[1][0])
            }
            p["undecided"] = und
            draws = draw_outcomes(p, self.seeds, item.image_id, spec.scenario.id, spec.ordering.id)
            for seed, choice in zip(self.seeds, draws):
                row = self._row(item, spec, seed)
                row.update(response=best.get(choice), choice=choice, **probs)
                rows.append(row)
        self._tick_cells(len(rows))
        return rows


def _one_hot(choice: str) -> dict[str, float]:
    return {
        "p_pos": float(choice == "positive"),
        "p_neg": float(choice == "negative"),
        "p_invalid": float(choice == "invalid"),
        "p_undecided": 0.0,
    }


def _poles(mass: Mapping[str, float], ordering: Ordering) -> dict[str, float]:
    """Letter masses -> pole masses under ``ordering``."""
    return {
        "positive": mass[ordering.letter_of("positive")],
        "negative": mass[ordering.letter_of("negative")],
        "invalid": mass["invalid"],
    }
