"""Routing before retrieval: does this request need the corpus at all? (the spec's case 3)

    "Make this email friendlier", arithmetic on numbers the user typed, small talk: the best
    context for these is none. Deciding whether to retrieve at all is a routing decision.

Cheap rules first. A request is routed to `no_retrieve` only when a positive pattern matches
and nothing in the request points at the organisation's content; everything else retrieves,
because a wrong `no_retrieve` loses the answer while a wrong `retrieve` only costs tokens.

* small talk: greetings, thanks, farewells, "how are you", "who are you", with nothing else asked;
* arithmetic: every number the request needs is in it ("what is 15% of 240?", "37 * 12"), and
  its words are arithmetic and units only;
* transforming text the user supplied: a rewrite verb (rewrite, rephrase, translate, proofread,
  make ... friendlier, shorten, summarise the following ...) and the text itself, after a colon,
  in quotes or on the next lines ("make this email friendlier: Hi Tom, ...");
* writing from nothing: a poem, a joke, a story about a general subject.

What points at the corpus, checked in the instruction only (never in the text supplied for
rewriting): "your"/"our", "you offer", "according to", "my <thing>" (my refund, my plan; not my
email or my notes), and nouns that name an organisation's rules or records (policy, terms, fee,
refund, plan, price, account, invoice, order, warranty, contract...). So "what is 15% of my
refund under your policy?" and "rewrite your refund policy in plain English" retrieve.

The rules say `sure` or `unsure`. With a router generator (docket's `Generator` protocol) and
`route.llm = "unsure"`, an unsure request is put to the model; `"always"` puts every request.
A model reply that is neither RETRIEVE nor NONE, or a failed call, retrieves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from docket.policy import RoutePolicy

RETRIEVE = "retrieve"
NO_RETRIEVE = "no_retrieve"


@dataclass(frozen=True)
class Route:
    action: str  # "retrieve" or "no_retrieve"
    rule: str  # which rule decided: small_talk, arithmetic, transform, compose, corpus_cue, default, llm
    reason: str
    sure: bool
    numbers: dict[str, Any] = field(default_factory=dict)


# --- the instruction and the text supplied with it -----------------------------------------

_QUOTED = re.compile(r"[\"“”«»「」]([^\"“”«»「」]{3,})[\"“”«»「」]|(?<![A-Za-z])'([^']{3,})'(?![A-Za-z])")


def split_supplied(request: str) -> tuple[str, str]:
    """(instruction, supplied text): text after the first colon or line break, or in quotes."""
    text = request.strip()
    m = re.search(r":\s*(?=\S)|\n", text)
    if m and len(text[m.end():].split()) >= 2:
        return text[: m.start()].strip(), text[m.end():].strip()
    q = _QUOTED.search(text)
    if q:
        quoted = q.group(1) or q.group(2) or ""
        if len(quoted.split()) >= 2:
            return (text[: q.start()] + " " + text[q.end():]).strip(), quoted.strip()
    return text, ""


def words(text: str) -> list[str]:
    return re.findall(r"[a-z]+(?:'[a-z]+)?", text.lower())


# --- what points at the corpus --------------------------------------------------------------

#: nouns that name an organisation's rules, offers or records
CORPUS_NOUNS = frozenset("""
policy policies terms condition conditions contract contracts agreement agreements clause clauses section sections
handbook manual documentation docs guideline guidelines procedure procedures process rule rules regulation regulations
plan plans tier tiers subscription subscriptions membership fee fees charge charges price prices pricing cost costs
rate rates discount discounts coupon refund refunds reimbursement reimbursements payout payouts invoice invoices
billing receipt order orders shipment shipping delivery warranty guarantee account accounts password login profile
balance quota quotas limit limits allowance deadline deadlines penalty penalties eligibility eligible benefit benefits
allowance leave holiday holidays schedule support ticket license licence seat seats sla uptime retention
cancellation cancel upgrade downgrade renewal trial version versions release product products service services
feature features api endpoint storage upload plan's company employer office travel expense expenses
""".split())
#: what "my ..." may name without pointing at the corpus: the user's own text
OWN_TEXT = frozenset("""
email emails mail message messages text sentence sentences paragraph paragraphs note notes draft drafts letter
letters essay essays list lists reply answer wording tone writing post tweet bio summary poem story speech cover
""".split())
_CUE_PHRASES = re.compile(
    r"\b(your|yours|our|ours)\b|\byou (offer|have|provide|charge|support|allow|sell|ship|accept|cover|give)\b"
    r"|\baccording to\b|\bunder (the|this|that)\b"
    r"|\b(the|this|that) (company|organi[sz]ation|team|firm)\b"
)


def corpus_cues(instruction: str) -> list[str]:
    """The words of the instruction that point at the organisation's content."""
    low = instruction.lower()
    cues = [m.group(0) for m in _CUE_PHRASES.finditer(low)]
    w = words(low)
    cues += [x for x in w if x in CORPUS_NOUNS]
    cues += [f"my {b}" for a, b in zip(w, w[1:]) if a in ("my", "mine") and b not in OWN_TEXT and b not in _FUNCTION]
    return list(dict.fromkeys(cues))


# --- the no_retrieve patterns -------------------------------------------------------------

_SMALL_TALK = re.compile(
    r"\b(hi|hello|hey|hiya|howdy|greetings|yo|good (morning|afternoon|evening|night|day)|thanks?|thank you( (so|very) much)?"
    r"|thx|ty|cheers|much appreciated|appreciate it|bye|goodbye|see you( later| soon)?|take care|have a (nice|good|great) "
    r"(day|one|evening|weekend)|how are you( doing)?( today)?|how is it going|how's it going|what's up|whats up|sup"
    r"|who are you|what are you|what is your name|what's your name|are you (a )?(bot|robot|human|real|an ai)"
    r"|what can you do|tell me (a joke|something funny)|you('re| are) (great|awesome|helpful|amazing|the best)"
    r"|(that was|that's|thats|very|super|really) (helpful|great|useful|perfect|nice)|great|perfect|awesome|nice|cool"
    r"|ok(ay)?|sure|got it|sounds good|no worries|np|lol|haha|please|there|again|so|much|a|lot|well|too|sir|madam"
    r"|everyone|folks|team|friend|mate)\b"
)
_FUNCTION = frozenset("""
a an the and or but if then so of to in on at by for with from into over under about as is are was were be been
being am do does did it its this that these those there here what which who whom how much many i me my we you he
she they them his her their is it's what's whats s t
""".split())

_NUMBER = re.compile(
    r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?%?|\b(?:half|twice|double|triple|quarter|zero|one|two|three|four|five|six|seven|"
    r"eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|"
    r"fifty|sixty|seventy|eighty|ninety|hundred|thousand|million|billion)\b")
_OPERATOR = re.compile(r"\d\s*[-+*/x×÷^%]\s*\d|\d\s*\*\*\s*\d")
#: words an arithmetic request may have besides numbers (operations, units, small talk around it)
ARITHMETIC_WORDS = frozenset("""
what whats what's is are equals equal calculate compute work out solve evaluate plus add added adding sum total minus subtract
subtracted less times multiply multiplied by divide divided over per percent percentage of off increase decrease
increased decreased average mean median round rounded square root cubed squared power remainder mod modulo difference
between product quotient ratio how much many left remain remains result answer give get make makes if pay paid save
saved spend spent earn earned tip split convert conversion into to in from celsius fahrenheit kelvin degrees degree
km kilometers kilometres miles mile meters metres feet foot inches inch cm mm kg kilograms kilos grams pounds lbs ounces
oz liters litres gallons ml seconds second minutes minute hours hour days day weeks week months month years year
dollars dollar usd eur euros euro cents cent gbp bucks bill tax vat each every per cent rate interest simple compound annual
monthly weekly daily yearly hourly speed distance time take takes took long far fast quickly approximately roughly
about exactly please can could you tell me need want know i we with do does did will would have has
root sqrt factorial log logarithm sine cosine tangent reciprocal after before then and or the a an it that this
those these for at on number numbers value values up down double half twice triple quarter
""".split())
_UNARY = re.compile(r"\b(square root|sqrt|squared|cubed|factorial|log|logarithm|sine|cosine|tangent|reciprocal|"
                    r"double|half|triple|twice)\b")
_CONVERSION = re.compile(r"\b(convert|in|to|into)\b.*\b(celsius|fahrenheit|kelvin|km|kilomet|mile|meter|metre|feet|"
                         r"foot|inch|cm|kg|pound|lbs|ounce|liter|litre|gallon|second|minute|hour|day|week|month|year)")

_TRANSFORM = re.compile(
    r"\b(re-?write|re-?phrase|re-?word|paraphrase|proof-?read|edit|polish|tidy|clean up|improve|fix|correct|translate|"
    r"summari[sz]e|condense|shorten|simplify|expand|reformat|format|restructure|capitali[sz]e|lowercase|uppercase|"
    r"convert|turn|put|spell-?check|check (the )?(grammar|spelling)|make)\b"
)
_MAKE_LIKE = re.compile(
    r"\bmake\b.*\b(friendl|polite|formal|informal|casual|shorter|longer|clearer|concise|professional|warm|nicer|"
    r"better|simpler|punch|persuasive|less|more|sound)"
)
_COMPOSE = re.compile(
    r"\b(write|compose|make up|come up with|give me|tell me|create)\b.*\b(poem|haiku|limerick|sonnet|song|lyrics|joke|"
    r"riddle|story|fable|tongue twister|pun|slogan|toast|rhyme)s?\b"
)


def _small_talk(request: str) -> bool:
    low = request.lower()
    if not re.search(r"[a-z]", low) or re.search(r"\d", low):
        return False
    rest = _SMALL_TALK.sub(" ", low)
    left = [w for w in words(rest) if w not in _FUNCTION]
    return not left and _SMALL_TALK.search(low) is not None


def _arithmetic(request: str) -> tuple[bool, int]:
    low = request.lower()
    numbers = _NUMBER.findall(low)
    if not numbers:
        return False, 0
    left = [w for w in words(_NUMBER.sub(" ", low)) if w not in ARITHMETIC_WORDS]
    if left:
        return False, len(numbers)
    enough = len(numbers) >= 2 or any(p.search(low) for p in (_OPERATOR, _CONVERSION, _UNARY))
    return enough, len(numbers)


def rules(request: str) -> Route:
    """The cheap rules' decision (see the module docstring)."""
    text = " ".join(request.split())
    instruction, supplied = split_supplied(request)
    if _small_talk(text):  # first: only small-talk phrases, so "what's your name?" is no corpus cue
        return Route(NO_RETRIEVE, "small_talk", "small talk: nothing to look up", True)
    cues = corpus_cues(instruction)
    if cues:
        return Route(RETRIEVE, "corpus_cue", f"the request points at the corpus ({', '.join(cues[:4])})", True,
                     {"cues": cues[:8]})
    is_sum, n = _arithmetic(text)
    if is_sum:
        return Route(NO_RETRIEVE, "arithmetic", f"arithmetic on the {n} number(s) in the request", True, {"numbers": n})
    low = instruction.lower()
    if supplied and (_TRANSFORM.search(low) or _MAKE_LIKE.search(low)):
        return Route(NO_RETRIEVE, "transform", f"a rewrite of text the request supplies ({len(supplied.split())} words)",
                     True, {"supplied_words": len(supplied.split())})
    if _COMPOSE.search(low):
        return Route(NO_RETRIEVE, "compose", "writing from nothing on a general subject", True)
    if n:
        return Route(RETRIEVE, "default", "numbers, but not all an arithmetic answer needs", False, {"numbers": n})
    return Route(RETRIEVE, "default", "no rule says the corpus is not needed: retrieve", False)


# --- the model router ----------------------------------------------------------------------

ROUTER_SYSTEM = (
    "You decide whether a request to a company's assistant needs the company's documents. Reply with one word. "
    "NONE: the request can be done from its own words alone - rewriting, translating or correcting text it "
    "contains, arithmetic on numbers it gives, small talk, or writing a poem or joke on a general subject. "
    "RETRIEVE: it needs any fact that is not in the request, such as the company's policies, prices, products, "
    "accounts, dates or people."
)


def ask_model(request: str, generator: Any) -> Route:
    """The generator's decision; any failure or unclear reply retrieves."""
    messages = [{"role": "system", "content": ROUTER_SYSTEM},
                {"role": "user", "content": f"Request: {request.strip()}\n\nReply RETRIEVE or NONE."}]
    name = str(getattr(generator, "name", type(generator).__name__))
    try:
        reply = str(generator.generate(messages, max_tokens=4, temperature=0.0))
    except Exception as e:  # noqa: BLE001 - a router must never fail the request
        return Route(RETRIEVE, "llm", f"the router model failed ({type(e).__name__}): retrieve", False,
                     {"router": name})
    first = (re.findall(r"[a-z_]+", reply.lower()) or [""])[0]
    if first in ("none", "no_retrieve", "noretrieve", "no"):
        return Route(NO_RETRIEVE, "llm", f"the router model ({name}) says the documents are not needed", True,
                     {"router": name, "reply": reply.strip()[:40]})
    if first in ("retrieve", "yes", "search"):
        return Route(RETRIEVE, "llm", f"the router model ({name}) says the documents are needed", True,
                     {"router": name, "reply": reply.strip()[:40]})
    return Route(RETRIEVE, "llm", f"the router model ({name}) gave an unclear reply: retrieve", False,
                 {"router": name, "reply": reply.strip()[:40]})


def decide(request: str, policy: RoutePolicy, generator: Any | None = None) -> Route:
    """Rules, then the model where the policy says so."""
    by_rules = rules(request)
    if generator is None or policy.llm == "never" or (policy.llm == "unsure" and by_rules.sure):
        return by_rules
    by_model = ask_model(request, generator)
    return Route(by_model.action, by_model.rule, by_model.reason, by_model.sure,
                 {**by_model.numbers, "rules": by_rules.action, "rules_rule": by_rules.rule})
