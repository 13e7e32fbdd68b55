"""Every knob of every move, validated, loadable from TOML.

Defaults follow the spec: cosine duplicate threshold 0.95, score floor 0.40 (for the default
MiniLM cosine; tune it with `docket calibrate`), expansion of the top hit by one neighbour
each side, best-first order, XML fences, the literal refusal sentence, compression off.
"""

from __future__ import annotations

import difflib
from datetime import date as Date
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from docket.brief.formats import text_formats
from docket.errors import InputError
from docket.safeio import load_toml, shown

DEFAULT_REFUSAL = "I do not know from the provided sources."
#: the passage header fields `render.fields` may name (brief/render.py `header_fields`)
HEADER_FIELDS = ("title", "section", "version", "date", "status", "trust", "source", "doc")


class _Strict(BaseModel):
    # NaN compares false with everything, so a NaN floor or weight would switch a rule off silently;
    # infinities make sums meaningless. Every float setting must be a finite number.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class VersionsPolicy(_Strict):
    enabled: bool = True
    #: authority per source type, higher wins. Status "user-generated" counts as "forum".
    authority: dict[str, int] = Field(
        default_factory=lambda: {"policy": 100, "legal": 100, "docs": 80, "help": 60, "faq": 60,
                                 "blog": 40, "forum": 10, "user": 10}
    )
    default_authority: int = 50
    #: packing and prompt order: among passages scoring within this much of the best remaining
    #: one (score units, like the floor), the higher authority goes first; 0 = rank order. A
    #: passage outranked by one it contradicts always goes after it (docket.moves.authority)
    authority_window: float = Field(0.1, ge=0.0)
    #: look up the in-force version's same section when only an old version was retrieved
    fetch_current: bool = True
    #: a date the question asks about ("in 2024", "before the 2026 update"): "apply" it as the
    #: as-of date when it changes which version of a candidate document is in force (unless the
    #: caller pinned one); "warn" only says so in the trace and warnings; "off" ignores it
    question_dates: Literal["apply", "warn", "off"] = "apply"
    #: two in-force chunks of different documents at least this similar (cosine) are compared
    #: statement by statement (docket.claims); reworded statements of one rule score 0.5-0.8
    conflict_similarity: float = Field(0.55, ge=0.0, le=1.0)
    #: ... and a year or a unit-less number differs only between sentences sharing this much of
    #: their words (Jaccard); an amount with a unit (days, EUR, %) needs 0.3, a negation 0.4
    conflict_overlap: float = Field(0.6, gt=0.0, le=1.0)

    @field_validator("authority")
    @classmethod
    def _folded_source_types(cls, v: dict[str, int]) -> dict[str, int]:
        """Move 1 looks a chunk's source type up in lower case, so a key written `Wiki` would never
        match: keys are folded to lower case here. Two keys that fold to one (`Wiki`, `wiki`)
        with different values are refused: which one was meant cannot be known."""
        out: dict[str, int] = {}
        given: dict[str, str] = {}
        for key, value in v.items():
            folded = key.lower()
            if folded in out and out[folded] != value:
                raise ValueError(f"{given[folded]!r} = {out[folded]} and {key!r} = {value} name one source type "
                                 f"(source types are matched in lower case); keep one")
            out[folded] = value
            given.setdefault(folded, key)
        return out

    def ranks_source_type(self, source_type: str) -> bool:
        """The authority table names `source_type` (read as Move 1 reads it, in lower case);
        any other source type ranks at `default_authority`."""
        return source_type.lower() in self.authority

    def source_type_meant(self, source_type: str) -> str | None:
        """The table's source type that `source_type` (one it does not name) likely meant: a
        typo (`polcy`), spaces around it (` policy`), or None when none is close."""
        folded = source_type.strip().lower()
        if folded in self.authority:
            return folded
        near = difflib.get_close_matches(folded, sorted(self.authority), n=1, cutoff=0.7)
        return near[0] if near else None


class DedupPolicy(_Strict):
    enabled: bool = True
    threshold: float = Field(0.95, ge=0.0, le=1.0)
    mmr: bool = False
    mmr_lambda: float = Field(0.7, ge=0.0, le=1.0)
    #: how many passages MMR picks; None = all that survive
    mmr_k: int | None = Field(None, ge=1)


class ExpandPolicy(_Strict):
    enabled: bool = True
    mode: Literal["window", "section"] = "window"
    top_n: int = Field(1, ge=0)
    window: int = Field(1, ge=0)
    #: a passage grown by expansion may not exceed this many tokens (its text). 1500 fits the
    #: default window (the hit and one neighbour each side) of chunks up to 500 tokens (typical:
    #: 300-400, 3 x 390 = 1170); 600, the old default, let no neighbour join a 390-token chunk
    max_passage_tokens: int = Field(1500, ge=1)
    #: a parent section larger than this falls back to the window
    max_section_tokens: int = Field(1500, ge=1)
    #: ... and never more than this share of the evidence budget, so the grown passage still
    #: fits beside other evidence (at a 1000-token budget: 500 tokens of text)
    max_budget_share: float = Field(0.5, gt=0.0, le=1.0)


class PackPolicy(_Strict):
    enabled: bool = True
    #: evidence budget: tokens of the whole documents block. None = derive from input_target.
    budget: int | None = Field(None, ge=1)
    floor: float = 0.40
    #: relative floor: drop candidates scoring more than this below the best one (None = off).
    #: The budget is a ceiling, not a target: far below the best, a passage is a distractor that
    #: costs tokens. Fit it with `docket calibrate` (the gap that keeps, say, 99% of gold).
    margin: float | None = Field(None, gt=0.0)
    #: backward budget arithmetic, used when `budget` is None
    input_target: int = Field(6000, ge=1)
    answer_reserve: int = Field(0, ge=0)
    history_tokens: int = Field(0, ge=0)
    #: put official sources ahead of untrusted ones, so the budget cuts strangers first
    untrusted_last: bool = True
    #: untrusted passages (forum posts, web pages): "use" them like any other; "fallback" only when
    #: no trusted candidate clears the floor (the spec's Layer 3: keep strangers out of answers
    #: that do not need them); "never"
    untrusted: Literal["use", "fallback", "never"] = "use"
    #: at most this many passages (None = no cap; the budget and the floor decide)
    max_passages: int | None = Field(None, ge=1)


class CompressPolicy(_Strict):
    enabled: bool = False
    #: a misfit passage counts as "needed" when its packing rank is at most this
    needed_top: int = Field(2, ge=1)
    keywords: list[str] = Field(
        default_factory=lambda: ["except", "unless", "waived", "only", "not", "never", "no",
                                 "without", "but", "however", "excluding", "exempt"]
    )
    #: Option C of the answer brief: when the candidates above the floor do not all fit, the best
    #: go in whole and a model summarises the rest into one passage (needs a generator: --llm)
    summary: bool = False
    #: the summary passage's text may use at most this many tokens of the budget
    summary_tokens: int = Field(200, ge=20, le=4000)
    #: at most this many tokens of the passages that did not fit are given to the summariser
    #: (best first); the rest is left out, and the trace says so
    summary_input_tokens: int = Field(3000, ge=100, le=200_000)


class OrderPolicy(_Strict):
    enabled: bool = True
    mode: Literal["best_first", "edges", "chronological"] = "best_first"
    group_documents: bool = True
    #: official sources before strangers' posts in the prompt too, not only in packing
    untrusted_last: bool = True


class RenderPolicy(_Strict):
    #: a registered text format (docket.brief.formats): "xml" or "lines"
    format: str = "xml"
    #: header fields shown for every passage, in this order. `source` is the source type (policy,
    #: help, forum, ...): the authority the ground rules and conflict notes refer to
    fields: list[str] = Field(default_factory=lambda: ["title", "section", "version", "date", "source", "status", "trust"])
    max_field_chars: int = Field(200, ge=10)
    #: leave status="current" and trust="trusted" off the tags (the ground rules say a bare tag
    #: means exactly that); any other status or trust is always shown
    implicit_defaults: bool = True
    #: show the title even when the passage's first words already state it ("Pearl Jam is a ...");
    #: false saves 4-6 tokens a passage on encyclopaedia-style text
    repeated_title: bool = False
    #: spotlighting (the spec's Layer 2): "datamark" joins the words of untrusted passages with
    #: MARK, a continuous signal of where the text came from (Hines et al., 2024); costs tokens
    spotlight: Literal["off", "datamark"] = "off"

    @field_validator("format")
    @classmethod
    def _registered_format(cls, v: str) -> str:
        if v not in text_formats():
            raise ValueError(f"must be one of {' or '.join(map(repr, text_formats()))}, got {v!r}")
        return v

    @field_validator("fields")
    @classmethod
    def _known_fields(cls, v: list[str]) -> list[str]:
        unknown = [f for f in v if f not in HEADER_FIELDS]
        if unknown:
            raise ValueError(f"unknown header field(s) {', '.join(map(repr, unknown))}; choose from {', '.join(HEADER_FIELDS)}")
        return v


class BriefPolicy(_Strict):
    role: str = "You are a careful assistant that answers questions using only the documents provided."
    refusal: str = DEFAULT_REFUSAL
    answer_format: str = "Answer in a short paragraph."
    #: the rule repeated after the documents: the citation rule, the refusal sentence, or both
    repeat: Literal["cite", "refusal", "both"] = "cite"
    extra_rules: list[str] = Field(default_factory=list)


class RescorePolicy(_Strict):
    """Re-scoring of the candidate pool (see docket.rescore). Bonuses are in cosine units.

    On by default: +23 points of gold-in-prompt at 500 tokens on HotpotQA, +8 on MuSiQue
    (benchmarks/README.md), and the Nimbus briefs keep their shape."""

    enabled: bool = True
    #: bonus when the question names the candidate's title (1.0 = the whole title as a phrase)
    title_weight: float = Field(0.3, ge=0.0)
    #: bonus for BM25 of the question's words over the pool, normalised to 0..1 by the pool's best
    lexical_weight: float = Field(0.3, ge=0.0)
    #: bonus when a top passage mentions the candidate's title (multi-hop bridges)
    link_weight: float = Field(0.45, ge=0.0)
    #: how many of the best passages (after the title and lexical bonuses) count as linking
    link_top: int = Field(3, ge=0)
    #: rounds of linking: each round reads the top again, following one more hop of a chain
    link_rounds: int = Field(2, ge=1, le=5)


#: the "not found" floor when neither `answerable.floor` nor `pack.floor` is set: the best
#: candidate's score as the ranker gave it (before re-scoring, whose bonuses depend on the pool)
#: must reach it. Chosen for MiniLM cosines on public data by benchmarks/default_floor.py
#: (HotpotQA and MuSiQue with and without their gold paragraphs, SQuAD 2.0): the best mean over
#: the three sets of (2 x answerable kept + unanswerable caught) / 3, since a false "not found"
#: never reaches a model while a false "found" still meets the refusal rule; see
#: benchmarks/README.md. Another scorer needs its own: fit it with `docket calibrate`.
NOT_FOUND_FLOOR = 0.48


#: the signals docket.answerable computes, which `answerable.weights` may weigh (the policy owns
#: the names so it can check them without importing the check)
SIGNALS = ("top", "gap", "mean3", "cov_best", "cov_top", "sent_cov", "sent_cos", "missing")


class AnswerablePolicy(_Strict):
    """The "not found" decision (see docket.answerable).

    `floor`: when the best candidate's score (as the ranker gave it, before re-scoring) is below
    it, the brief is not found (no prompt, no LLM call). Unset, it is the shipped default
    NOT_FOUND_FLOOR, unless `pack.floor` is set (in the policy or by `--floor`): then that one
    floor decides both, as before. `pack.floor` alone decides which candidates are noise; the two
    differ because dropping a weak candidate from a good pool costs little, while answering "not
    found" to an answerable question costs a lot.

    The model: a logistic regression over a few signals of the candidate pool; fit it with
    `docket calibrate`, which switches it on only when it beats the floor held out.
    P(answerable) = sigmoid(bias + sum(weights[name] * signal[name])); "not found" below `threshold`.
    """

    #: the not-found gate at all; false: every pool that clears the noise floor is found (what
    #: `docket eval` measures the gate against)
    gate: bool = True
    #: the shipped answerability reader (docket.reader, MiniLM stores only) decides "not found"
    #: instead of the floor and the keyword evidence: held out it refuses 1-4% of answerable
    #: questions where the rule gate refused 8-18% (docs/policy.md, "Not found"); false: the rule
    #: gate (the shipped floor, exact identifiers, keyword cover) decides, as before
    reader: bool = True
    #: the reader's threshold on P(answerable); None: the shipped default (chosen to refuse at most
    #: 3% of answerable training questions); the reader's `meta.balanced_threshold` says more "not
    #: found" at a cost in answerable questions
    reader_threshold: float | None = Field(None, ge=0.0, le=1.0)
    floor: float | None = None
    #: the embedder `floor` was fitted for (`Embedder.name`; `docket calibrate` writes it): with
    #: another embedder the floor does not apply (a cosine floor is one embedder's scale)
    embedder: str | None = None
    enabled: bool = False
    weights: dict[str, float] = Field(default_factory=dict)

    bias: float = 0.0
    threshold: float = Field(0.5, ge=0.0, le=1.0)
    #: how many of the best candidates the coverage signals read
    top_n: int = Field(3, ge=1)

    @field_validator("weights")
    @classmethod
    def _known_signals(cls, v: dict[str, float]) -> dict[str, float]:
        unknown = [k for k in v if k not in SIGNALS]
        if unknown:
            raise ValueError(f"unknown signal(s) {', '.join(map(repr, unknown))}; choose from {', '.join(SIGNALS)}")
        return v


class HistoryPolicy(_Strict):
    """Chat history in the brief (docket.history): capped, newest turns kept word for word."""

    #: the history budget: tokens of the kept turns (the spec's 900-token line of the arithmetic)
    max_tokens: int = Field(900, ge=0)
    #: at most this many turns (None = the token budget decides)
    max_turns: int | None = Field(None, ge=1)
    #: summarise the turns that do not fit with the generator, when the caller configured one
    condense: bool = False
    #: remove [S1]-style labels from earlier answers: they point at documents no longer in the prompt
    strip_labels: bool = True
class ModelPolicy(_Strict):
    """Which model the brief is for (docket.presets; docs/modes.md)."""

    #: a shipped preset (docket/data/presets.toml): fills pack.input_target, pack.answer_reserve,
    #: model.context_window and model.tokenizer where the policy file sets none
    preset: str | None = None
    #: the model's window in tokens: the prompt plus the answer reservation must fit (None: unchecked)
    context_window: int | None = Field(None, ge=1)
    #: the offline token counter: "o200k_base" (GPT-4o; the stand-in for models whose own does not
    #: ship offline) or "cl100k_base" (GPT-4, GPT-3.5)
    tokenizer: Literal["o200k_base", "cl100k_base"] = "o200k_base"

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, v: str | None) -> str | None:
        from docket.presets import preset_names

        if v is not None and v not in preset_names():
            raise ValueError(f"unknown model preset {v!r}; known: {', '.join(preset_names())}")
        return v


class CorpusPolicy(_Strict):
    """The whole corpus instead of retrieval (the spec's "when not to augment", case 2)."""

    #: "retrieve": never; "whole": always (an error when it does not fit); "auto": when the corpus
    #: the asker may read fits `max_tokens` (and the model's window), with the arithmetic traced
    mode: Literal["retrieve", "whole", "auto"] = "retrieve"
    #: the largest corpus block sent whole (Anthropic's rule of thumb: 200,000 tokens, ~500 pages)
    max_tokens: int = Field(200_000, ge=1)


class AttachPolicy(_Strict):
    """Files the user attached (the spec's case 4: the user handed you the source)."""

    #: an attachment goes in whole when its block fits this many tokens; None = the evidence budget
    whole_max_tokens: int | None = Field(None, ge=1)
    #: when it does not fit, it is chunked like `docket index` does, then ranked and packed
    chunk_size: int = Field(300, ge=16)
    overlap: int = Field(40, ge=0)
    #: files larger than this are refused (a 20 MB PDF is rarely the whole intent)
    max_bytes: int = Field(20_000_000, ge=1)
    #: a DOCX whose parts unzip to more than this is refused before it is parsed (sizes read from
    #: the archive and counted while inflating: a 154 KB file can inflate to 50 MB of XML)
    max_unzipped_bytes: int = Field(20_000_000, ge=1)
    #: a PDF with more pages than this is refused before any page is read
    max_pages: int = Field(500, ge=1)
    #: an attachment holding more characters of text than this is refused before it is chunked
    #: (about 250,000 tokens, 500 pages of prose: index a larger file with `docket index`)
    max_chars: int = Field(1_000_000, ge=1)

    @model_validator(mode="after")
    def _overlap_fits(self) -> AttachPolicy:
        if self.overlap >= self.chunk_size // 2:
            raise ValueError(f"attach.overlap must be less than half of attach.chunk_size ({self.chunk_size}), "
                             f"got {self.overlap}")
        return self


class RoutePolicy(_Strict):
    """A routing step before retrieval: does the request need the corpus at all? (case 3)."""

    enabled: bool = False
    #: with a router generator configured: "unsure" asks it when the rules are not sure, "always"
    #: asks it every time, "never" keeps to the rules
    llm: Literal["unsure", "always", "never"] = "unsure"
    #: the system message of a brief without evidence
    role: str = "You are a careful, helpful assistant."


class CachePolicy(_Strict):
    """Prompt caching: breakpoints in the Anthropic request and the cost report of every brief."""

    #: Anthropic `cache_control` after the system prompt, and after the corpus in whole-corpus mode
    breakpoints: bool = True
    #: USD per million input tokens, for the brief's cost report (the spec's worked example: 3.00)
    price: float = Field(3.0, ge=0.0)
    #: cached-read and cache-write multipliers of the input price (Anthropic's 5-minute cache)
    read: float = Field(0.1, ge=0.0)
    write: float = Field(1.25, ge=0.0)
    #: providers cache a prefix only from this length (OpenAI, and Anthropic's Sonnet: 1,024)
    min_tokens: int = Field(1024, ge=0)


def _check_section(name: str, values: Any) -> None:
    """`Policy.updated` / `overridden` take sections as dicts of fields."""
    if name not in SECTIONS or not isinstance(values, dict):
        raise InputError(f"is not a policy section; choose from {', '.join(SECTIONS)}", where="policy", field=name)


class Policy(_Strict):
    rescore: RescorePolicy = Field(default_factory=RescorePolicy)
    answerable: AnswerablePolicy = Field(default_factory=AnswerablePolicy)
    versions: VersionsPolicy = Field(default_factory=VersionsPolicy)
    dedup: DedupPolicy = Field(default_factory=DedupPolicy)
    expand: ExpandPolicy = Field(default_factory=ExpandPolicy)
    pack: PackPolicy = Field(default_factory=PackPolicy)
    compress: CompressPolicy = Field(default_factory=CompressPolicy)
    order: OrderPolicy = Field(default_factory=OrderPolicy)
    render: RenderPolicy = Field(default_factory=RenderPolicy)
    brief: BriefPolicy = Field(default_factory=BriefPolicy)
    history: HistoryPolicy = Field(default_factory=HistoryPolicy)
    model: ModelPolicy = Field(default_factory=ModelPolicy)
    corpus: CorpusPolicy = Field(default_factory=CorpusPolicy)
    attach: AttachPolicy = Field(default_factory=AttachPolicy)
    route: RoutePolicy = Field(default_factory=RoutePolicy)
    cache: CachePolicy = Field(default_factory=CachePolicy)
    as_of: Date | None = None

    @model_validator(mode="after")
    def _sane(self) -> Policy:
        if not self.brief.refusal.strip():
            raise ValueError("brief.refusal must not be empty")
        window = self.model.context_window
        if window is not None and self.pack.input_target > window:
            raise ValueError(f"pack.input_target {self.pack.input_target} is larger than model.context_window {window}; "
                             "lower it or pick the right model")
        return self

    def not_found_floor(self) -> tuple[float | None, str]:
        """The floor the best candidate's ranker score must reach for a brief to be found, and
        where it comes from; None when `pack.floor` was set and alone decides (nothing above it:
        not found)."""
        if self.answerable.floor is not None:
            return self.answerable.floor, "answerable.floor"
        if "floor" in self.pack.model_fields_set:
            return None, "pack.floor"
        return NOT_FOUND_FLOOR, "the default for MiniLM cosines, chosen on public data; fit yours with docket calibrate"

    def with_moves_off(self, *moves: str) -> Policy:
        """A copy with the named moves switched off (for ablations)."""
        data = self.model_dump(exclude_unset=True)
        for m in moves:
            if m not in MOVE_NAMES:
                raise InputError(f"unknown move {m!r}; choose from {', '.join(MOVE_NAMES)}", field="move")
            data.setdefault(m, {})["enabled"] = False
        return Policy.model_validate(data)

    def updated(self, **sections: Any) -> Policy:
        """A copy with some fields of some sections replaced, validated. Fields left at their
        default stay unset (so `not_found_floor` can tell a floor you chose from the default)."""
        data = self.model_dump(exclude_unset=True)
        for name, values in sections.items():
            if name == "as_of":
                data["as_of"] = values
                continue
            _check_section(name, values)
            data.setdefault(name, {}).update(values)
        return load_policy_dict(data, where="policy")

    def overridden(self, **sections: Any) -> Policy:
        """`updated` for read-only use (one assembly's budget, floor or as-of date): only the given
        values are validated, and the other sections are shared with this policy, not copied.
        Never mutate the result. The same errors as `updated`."""
        data: dict[str, Any] = {name: getattr(self, name) for name in type(self).model_fields}
        for name, values in sections.items():
            if name == "as_of":
                data["as_of"] = values
                continue
            _check_section(name, values)
            sec = data[name]
            try:  # fields left at their default stay unset, as `updated` leaves them
                data[name] = type(sec).model_validate({**sec.model_dump(exclude_unset=True), **values})
            except ValidationError as e:
                raise _input_error(e, "policy", prefix=name) from None
        try:
            out = type(self).model_validate(data)  # the sections are instances: not validated again
        except ValidationError as e:
            raise _input_error(e, "policy") from None
        object.__setattr__(out, "__pydantic_fields_set__", self.model_fields_set | set(sections))
        return out


#: every section of the policy (a new section is one field of Policy, nothing else to list)
SECTIONS = tuple(name for name in Policy.model_fields if name != "as_of")
MOVE_NAMES = ("rescore", "answerable", "versions", "dedup", "expand", "pack", "compress", "order")


def load_policy_dict(data: dict[str, Any], where: str = "policy") -> Policy:
    from docket.presets import fill_from_preset

    try:
        return Policy.model_validate(fill_from_preset(data))
    except ValidationError as e:
        raise _input_error(e, where) from None


def _input_error(e: ValidationError, where: str, prefix: str = "") -> InputError:
    first = e.errors()[0]
    loc = ".".join(str(p) for p in first.get("loc", ()))
    if prefix:
        loc = f"{prefix}.{loc}" if loc else prefix
    msg = first.get("msg", "invalid").removeprefix("Value error, ")
    kind = first.get("type")
    if kind == "extra_forbidden":
        msg = "is not a known setting (check the spelling; see docs/policy.md)"
    elif loc == "as_of" or loc.endswith(".as_of"):
        msg = f"must be a date like 2026-03-01, got {shown(first.get('input'))}"
    elif kind == "finite_number":
        msg = f"must be a finite number, got {first.get('input')!r}"
    elif kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal", "int_type", "float_type",
                  "literal_error", "bool_type", "int_parsing", "float_parsing", "bool_parsing"):
        msg = f"{msg}, got {shown(first.get('input'))}"
    return InputError(msg, where=where, field=loc or None)


def load_policy(path: str | Path | None) -> Policy:
    """Read a TOML policy file; None gives the defaults."""
    if path is None:
        return Policy()
    return load_policy_dict(load_toml(path), where=str(path))
