"""The dataset card: ``README.md`` in the Hugging Face dataset-card layout.

YAML metadata (licence, pretty name, tags, size category, the Parquet configs), then the
card's sections: Dataset Details, Uses (direct and out-of-scope), Dataset Structure, Dataset
Creation (source data, annotations, personal and sensitive information), Bias, Risks, and
Limitations, Citation, License. The statements are the ones ``croissant.json`` carries
(:func:`~.croissant.rai_fields`), so the two never disagree.
"""

from __future__ import annotations

import json
import re

from stylisticbias.release.croissant import rai_fields
from stylisticbias.release.facts import ReleaseFacts
from stylisticbias.release.table import COLUMNS

_SPDX_LIKE = re.compile(r"^[A-Za-z0-9.+-]+$")


def _size_category(n: int) -> str:
    for hi, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if n < hi:
            return label
    return "100K<n<1M" if n < 1_000_000 else "n>1M"


def _license_yaml(lic: str) -> list[str]:
    """Hugging Face takes lower-case SPDX-like ids; anything else is ``other`` + a link."""
    if _SPDX_LIKE.match(lic):
        return [f"license: {lic.lower()}"]
    return ["license: other", f"license_link: {json.dumps(lic)}"]


def front_matter(facts: ReleaseFacts) -> str:
    """The card's YAML header."""
    configs = ["configs:", "- config_name: images", "  data_files: images.parquet"]
    for m in facts.models:
        configs += [
            f"- config_name: judgments-{m.name}",
            f"  data_files: {m.judgments}",
            f"- config_name: scores-{m.name}",
            f"  data_files: {m.scores}",
        ]
    lines = [
        "---",
        *_license_yaml(facts.license),
        f"pretty_name: {json.dumps(facts.name)}",
        "language:",
        "- en",
        "task_categories:",
        "- visual-question-answering",
        "tags:",
        "- bias",
        "- fairness",
        "- faces",
        *(["- synthetic"] if not facts.imported else []),
        "size_categories:",
        f"- {_size_category(facts.n_images)}",
        *configs,
        "---",
    ]
    return "\n".join(lines)


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {s}" for s in items)


def card(facts: ReleaseFacts) -> str:
    """The whole ``README.md``."""
    rai = rai_fields(facts)
    demo = "\n".join(
        f"| {dim} | " + ", ".join(f"{k} {v}" for k, v in counts.items()) + " |"
        for dim, counts in facts.demographics.items()
    )
    columns = "\n".join(f"| `{c.name}` | {c.data_type[3:]} | {c.description} |" for c in COLUMNS)
    models = (
        "\n".join(
            f"| {m.display_name} (`{m.name}`) | {'yes' if m.simulated else 'no'} | "
            f"`{m.judgments}` | `{m.scores}` |"
            for m in facts.models
        )
        if facts.models
        else ""
    )
    model_section = (
        (
            "\n\n### Judgments and scores\n\n"
            "Per judged model: its answer records (image x scenario x ordering x seed, with "
            "the probabilities of the positive, negative and invalid answer) and its scores "
            "(phi per image x scenario; delta = a variation's phi minus its base face's).\n\n"
            "| model | simulated | judgments | scores |\n|---|---|---|---|\n" + models
        )
        if facts.models
        else ""
    )
    sim_banner = (
        "\n\n> **SIMULATED judgments.** The judgments and scores in this release come from "
        "simulated judges with planted effects; they are test data for the statistics, not "
        "measurements of any model.\n"
        if facts.any_simulated
        else ""
    )
    uses = rai["rai:dataUseCases"]
    source = (
        f"Imported from `{facts.source}`; its owner's licence is stated below as configured "
        "(`generator.license`)."
        if facts.imported
        else f"Images were {facts.generated_by}."
    )
    return f"""{front_matter(facts)}

# Dataset Card for {facts.name}

{facts.n_images} face images -- {facts.n_faces} base identities and {facts.n_variations} \
single-attribute edits ({facts.n_values} values in {facts.n_categories} categories) -- for \
auditing attribute-level social bias in multimodal LLMs with the StylisticBias protocol.\
{sim_banner}

## Dataset Details

### Dataset Description

Each base identity comes from a cell of a demographic grid (age x gender x ethnicity x body \
type); each variation changes one visual attribute of one base face (hair, makeup, eyewear, \
tattoos, fashion, ...). {facts.n_evaluated} images are in the benchmark's evaluation set \
(`evaluated`). The benchmark protocol (scenarios, prompts, orderings, parser rules) is \
`{facts.protocol_file}`.

- **Curated with:** the StylisticBias pipeline (DVC + Hydra), generator `{facts.generator_kind}`
- **License:** {facts.license}

## Uses

### Direct Use

{uses[0].removeprefix("Intended: ")}

### Out-of-Scope Use

{uses[1].removeprefix("Out of scope: ")}

## Dataset Structure

- `images.parquet`: one row per image; `images/faces/`, `images/variations/`: the image files \
(`file_name` is each file's path in this folder).
- `{facts.protocol_file}`: the benchmark protocol the images and judgments follow.
- `croissant.json`: Croissant 1.1 metadata with responsible-AI fields and sha256 checksums.

| column | type | meaning |
|---|---|---|
{columns}

Base identities per group:

| dimension | counts |
|---|---|
{demo}{model_section}

## Dataset Creation

### Curation Rationale

To measure how single visual cues (style, grooming, accessories) shift multimodal models' \
social judgments of the same person, every other pixel held as constant as the generator allows.

### Source Data

{rai["rai:dataCollection"]} {source} {rai["rai:dataCollectionMissingData"]}

### Annotations

{_bullets(rai["rai:dataAnnotationProtocol"])}

### Personal and Sensitive Information

{_bullets(rai["rai:personalSensitiveInformation"])}

## Bias, Risks, and Limitations

{_bullets(rai["rai:dataBiases"] + rai["rai:dataLimitations"])}

### Recommendations

{rai["rai:dataSocialImpact"]} Report model bias with its confidence intervals, never as a \
property of the depicted groups.

## Citation

{facts.citation}

## License

{facts.license}
"""
