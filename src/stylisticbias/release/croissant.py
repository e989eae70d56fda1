"""``croissant.json``: the release described in Croissant 1.1 JSON-LD with its RAI fields.

Distribution: one ``cr:FileObject`` per table and protocol file (each with its sha256), one
``cr:FileSet`` per image folder. Record sets: the per-image table (typed fields read from its
Parquet columns), the image files (file name + image content), and per judged model its
judgments and its phi/delta scores. The responsible-AI statements (data collection, biases,
limitations, personal and sensitive information, synthetic data, intended and out-of-scope
uses, social impact, maintenance) come from :class:`~.facts.ReleaseFacts`.

Validated by the ``mlcroissant`` library in the tests (its validator, and its record loader
against the Parquet tables); nothing here imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from stylisticbias.release.facts import ReleaseFacts
from stylisticbias.release.table import COLUMNS

CONFORMS_TO = "http://mlcommons.org/croissant/1.1"

#: the JSON-LD context of Croissant 1.1 with the RAI vocabulary (as the spec's examples write it)
CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "arrayShape": "cr:arrayShape",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "containedIn": "cr:containedIn",
    "cr": "http://mlcommons.org/croissant/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileObject": "cr:fileObject",
    "fileProperty": "cr:fileProperty",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "sc": "https://schema.org/",
    "samplingRate": "cr:samplingRate",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

PARQUET = "application/x-parquet"
YAML = "application/yaml"


def arrow_type(t: pa.DataType) -> str:
    """The Croissant data type of an Arrow column type."""
    if pa.types.is_boolean(t):
        return "sc:Boolean"
    if pa.types.is_integer(t):
        return "sc:Integer"
    if pa.types.is_floating(t):
        return "sc:Float"
    return "sc:Text"


def file_object(fid: str, path: str, sha256: str, size: int, fmt: str, desc: str) -> dict:
    """A ``cr:FileObject`` of the distribution (relative ``contentUrl``, sha256, size)."""
    return {
        "@type": "cr:FileObject",
        "@id": fid,
        "name": fid,
        "description": desc,
        "contentUrl": path,
        "encodingFormat": fmt,
        "contentSize": f"{size} B",
        "sha256": sha256,
    }


def _field(rs: str, name: str, dtype: str, desc: str, source: dict[str, Any]) -> dict:
    return {
        "@type": "cr:Field",
        "@id": f"{rs}/{name}",
        "name": name,
        "description": desc,
        "dataType": dtype,
        "source": source,
    }


def table_record_set(
    rs: str, fid: str, desc: str, schema: pa.Schema, key: Sequence[str] = ()
) -> dict:
    """A record set whose fields are the columns of the Parquet file ``fid``, typed from its
    Arrow schema."""
    out: dict[str, Any] = {"@type": "cr:RecordSet", "@id": rs, "name": rs, "description": desc}
    if key:
        out["key"] = [{"@id": f"{rs}/{k}"} for k in key]
    out["field"] = [
        _field(
            rs,
            f.name,
            arrow_type(f.type),
            f"Column {f.name} of {fid}.",
            {"fileObject": {"@id": fid}, "extract": {"column": f.name}},
        )
        for f in schema
    ]
    return out


def images_record_set() -> dict:
    """The per-image table's record set, its fields described by :data:`COLUMNS`."""
    return {
        "@type": "cr:RecordSet",
        "@id": "images",
        "name": "images",
        "description": "One record per image: identity, demographics, edit, generator and its "
        "settings, prompt, seed, QA status, file name, sha256 and size.",
        "key": {"@id": "images/image_id"},
        "field": [
            _field(
                "images",
                c.name,
                c.data_type,
                c.description,
                {"fileObject": {"@id": "images.parquet"}, "extract": {"column": c.name}},
            )
            for c in COLUMNS
        ],
    }


def image_files_record_set(file_sets: Sequence[str]) -> list[dict]:
    """One record set per image folder: each file's path and its pixels."""
    out = []
    for fs in file_sets:
        rs = f"{fs}-files"
        out.append(
            {
                "@type": "cr:RecordSet",
                "@id": rs,
                "name": rs,
                "description": f"The image files of {fs}: relative path and content.",
                "field": [
                    _field(
                        rs,
                        "file_name",
                        "sc:Text",
                        "Path of the file (join with images/file_name).",
                        {"fileSet": {"@id": fs}, "extract": {"fileProperty": "filepath"}},
                    ),
                    _field(
                        rs,
                        "image",
                        "sc:ImageObject",
                        "The image.",
                        {"fileSet": {"@id": fs}, "extract": {"fileProperty": "content"}},
                    ),
                ],
            }
        )
    return out


def rai_fields(facts: ReleaseFacts) -> dict[str, Any]:
    """The Croissant RAI properties of the release."""
    sim = (
        " The included judgments come from SIMULATED judges (planted effects, no model looked "
        "at the images) and measure nothing about any real model."
        if facts.any_simulated
        else ""
    )
    collection = (
        f"{facts.n_faces} base identities were sampled from a 90-cell demographic grid (age x "
        "gender x ethnicity x body type); each base face was then edited one attribute at a "
        f"time ({facts.n_values} attribute values in {facts.n_categories} categories). Images "
        f"were {facts.generated_by}. No person was photographed or recruited."
    )
    return {
        "rai:dataCollection": collection,
        "rai:dataCollectionType": ["Synthetic data"]
        if not facts.imported
        else ["Existing dataset (imported)"],
        "rai:dataCollectionMissingData": (
            f"{facts.n_not_ok} image request(s) were refused, blocked or failed; they stay in "
            "images.parquet with status and reason and no file."
        ),
        "rai:dataAnnotationProtocol": [
            "Demographic labels and edit labels are the generation specification (the cell and "
            "edit the image was made for), not annotations of the pixels: whether an image "
            "shows its labels was not checked by people.",
        ],
        "rai:dataPreprocessingProtocol": [
            "Every image is decoded and its sha256 recorded; images whose bytes differ from "
            "the manifest stop the release.",
        ],
        "rai:dataBiases": [
            "Demographic categories are coarse, socially constructed labels (5 ethnicities, 2 "
            "genders, 3 age groups, 3 body types) and encode the benchmark's design, not "
            "identity.",
            "How a group is rendered (skin tone, features, clothing) reflects the generator's "
            "own learned or hand-drawn stereotypes; the images may carry the very biases the "
            "benchmark measures.",
        ],
        "rai:dataLimitations": [
            "Synthetic or imported faces, not photographs of the people the labels name; "
            "effects measured on them need not transfer to real images.",
            "Single-attribute edits may change more than the named attribute (identity drift) "
            "depending on the generator.",
            "Judgments are forced binary choices at one temperature; they measure preference "
            "shifts under this protocol only." + sim,
        ],
        "rai:personalSensitiveInformation": [
            "Gender, age, ethnicity and body type labels are present as design variables of "
            "synthetic identities; no image depicts or identifies a real person by design"
            + (
                " (an imported set's own terms and consent records govern its images)."
                if facts.imported
                else "."
            ),
        ],
        "rai:dataUseCases": [
            "Intended: auditing multimodal LLMs for attribute-level social bias (how a single "
            "visual cue shifts forced-choice social judgments), reproducing the StylisticBias "
            "benchmark, calibrating bias statistics.",
            "Out of scope: training or evaluating face recognition, demographic or attribute "
            "classifiers; inferring anything about real people; ranking groups of people; "
            "any decision about individuals.",
        ],
        "rai:dataSocialImpact": (
            "Helps detect and compare social bias in multimodal models before deployment. "
            "Risks: the images and labels could be misused to build demographic classifiers, "
            "and bias scores could be misread as facts about groups rather than about models."
        ),
        "rai:dataReleaseMaintenancePlan": (
            "Rebuilt from the versioned pipeline (DVC): the same configuration gives the same "
            "bytes; corrections are new releases, older ones stay reproducible from git."
        ),
        "rai:hasSyntheticData": not facts.imported,
    }


def croissant(
    facts: ReleaseFacts,
    distribution: list[dict[str, Any]],
    record_sets: list[dict[str, Any]],
    version: str,
) -> dict[str, Any]:
    """The whole JSON-LD document."""
    desc = (
        f"{facts.n_images} face images ({facts.n_faces} base identities and "
        f"{facts.n_variations} single-attribute edits) for auditing attribute-level social "
        "bias in multimodal LLMs (StylisticBias), with one Parquet row per image"
        + (
            f" and the judgments and phi scores of {len(facts.models)} model(s)"
            if facts.models
            else ""
        )
        + "."
    )
    doc: dict[str, Any] = {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": facts.name,
        "description": desc,
        "license": facts.license,
        "version": version,
        "citeAs": facts.citation,
        "keywords": ["bias", "fairness", "multimodal LLM", "faces", "synthetic data"],
        "isLiveDataset": False,
        **rai_fields(facts),
        "distribution": distribution,
        "recordSet": record_sets,
    }
    if facts.url:
        doc["url"] = facts.url
    if facts.date_published:
        doc["datePublished"] = facts.date_published
    return doc
