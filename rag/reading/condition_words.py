"""The words the condition reader knows: units, measures, age groups, sexes, exclusive attributes.

What a guideline line or a question may state a patient's condition with (``conditions.py``
reads them): a number's unit and the measure it belongs to, comparators, age groups, sex and
pregnancy, families of exclusive attributes (route, vessel, circulation, episode, setting),
the diseases a line is stated for (``INDICATIONS``), "type X" subtypes, and the groups a dose
may be stated for (``QUALIFIERS``).
"""

from __future__ import annotations

import math
import re

INF = math.inf
NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"
DASH = r"\s*(?:-{1,2}|–|—|to)\s*"  # "40--75" too
# comparators as a line writes them, with the interval side each opens: "<" is (None, x)
LESS = (
    r"<=?|≤|=<|&lt;=?|less than(?: or equal to)?|lower than|below|under|fewer than|up to|at most"
    r"|no more than|within|not exceeding"
)
MORE = r">=?|≥|=>|&gt;=?|more than|greater than(?: or equal to)?|above|over|exceeding|at least|no less than"

# Units, canonical form first: what a number measures when no measure word names it.
UNITS: tuple[tuple[str, str], ...] = (
    ("mmol/l", r"mmol\s*/\s*l\b|mmol\s+per\s+lit(?:er|re)"),
    ("meq/l", r"meq\s*/\s*l\b"),
    ("mg/dl", r"mg\s*/\s*dl\b"),
    ("umol/l", r"[uµμ]mol\s*/\s*l\b"),
    ("ml/min", r"ml\s*/\s*min(?:ute)?(?:\s*/\s*1\.73\s*m(?:2|²)?)?|ml\s+per\s+min(?:ute)?"),
    ("ml/kg/h", r"ml\s*/\s*kg\s*/\s*h(?:ou)?r?\b"),
    ("ml/day", r"ml\s*(?:/|per|a|each)\s*(?:day|d\b|24\s*h(?:ours?)?)"),
    ("mmhg", r"mm\s*hg\b"),
    ("g/dl", r"g\s*/\s*dl\b"),
    ("x baseline", r"(?:times|x|×)\s*(?:the\s*)?(?:baseline|uln|upper limit)"),
    ("%", r"%|per\s*cent\b|percent\b"),
    ("kg", r"kg\b(?!\s*/)"),
    ("years", r"(?:years?|yrs?|y)(?:\s*of\s*age|\s*old|-old)?\b"),
    ("months", r"months?\b"),
    ("weeks", r"weeks?\b|wks?\b"),
    ("days", r"days?\b"),
    ("hours", r"hours?\b|hrs?\b|h\b"),
    ("minutes", r"minutes?\b|mins?\b"),
    ("/min", r"/\s*min\b|bpm\b|beats?\s*(?:per|/)\s*min(?:ute)?|breaths?\s*(?:per|/)\s*min(?:ute)?"),
)
UNIT = "|".join(f"(?:{pattern})" for _, pattern in UNITS)

# Measures and their spellings: two numbers are compared when they measure the same thing.
MEASURES: dict[str, str] = {
    "potassium": r"potassium|k\+|\bk\b|serum k",
    "sodium": r"sodium|na\+",
    "glucose": r"glucose|blood sugar|\bbg\b",
    "inr": r"\binr\b",
    "egfr": r"\be?gfr\b",
    "crcl": r"\bcrcl\b|creatinine clearance",
    "creatinine": r"creatinine|\bscr\b",
    "platelets": r"platelets?|\bplt\b",
    "hemoglobin": r"ha?emoglobin|\bhg?b\b",
    "blood pressure": r"systolic|\bsbp\b|blood pressure|\bbp\b",
    "heart rate": r"heart rate|\bhr\b|pulse",
    "saturation": r"\bsp?o2\b|saturation|\bsao2\b",
    "ph": r"\bph\b",
    "bicarbonate": r"bicarbonate|\bhco3",
    "ldl": r"\bldl(?:-c)?\b",
    "hba1c": r"\bhba1c\b|\ba1c\b",
    "gcs": r"\bgcs\b|glasgow",
    "bmi": r"\bbmi\b",
    "t-score": r"t-?\s?score",
    "fev1": r"\bfev1\b",
    "lactate": r"lactate",
    "weight": r"weigh(?:t|s|ing)",
    # an age band follows its population: "Elderly (>= 75 years)", "women 40 to 75 years"
    "age": (
        r"\bage[sd]?\b|years? old|year-old|elderly|adults?|patients|wom[ae]n|\bm[ae]n\b|children"
        r"|people|persons"
    ),
    "drainage": r"drain(?:age|ing|s)?|output",
}
MEASURE_RES = {name: re.compile(pattern, re.I) for name, pattern in MEASURES.items()}
# a named score or scale: "NEWS2", "ABCD2", "CURB-65", "CHA2DS2-VASc", "TIMI", "Child-Pugh"
SCORE = re.compile(r"\b(?:[A-Z][A-Za-z0-9]*[A-Z0-9][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*|[A-Z][a-z]+-[A-Z][a-z]+)\b")
NOT_SCORES = frozenset(
    {"IV", "PO", "IM", "SC", "ET", "IO", "DKA", "HHS", "TIA", "CAP", "ICU", "ED", "OR", "AND", "NOT", "OK"}
)
MEASURE_WINDOW = 40  # characters before a number that may name its measure

# "Child C", "Child-Pugh B": a cirrhosis class, not a child
NOT_PUGH = r"(?![- ]pugh\b|(?-i:\s+(?:class\s+)?[ABC]\b))"

CHILD = rf"\b(?:child(?:ren|hood)?{NOT_PUGH}|p(?:a)?ediatric\w*|kids?|toddlers?)\b"

# Age groups as intervals in years; a question's stated age is a point.
AGE_GROUPS: tuple[tuple[tuple[float, float], re.Pattern[str]], ...] = (
    ((0.0, 0.08), re.compile(r"\b(?:newborns?|neonat\w*|nicu)\b", re.I)),
    ((0.0, 1.0), re.compile(r"\binfan(?:t|ts|cy)\b", re.I)),
    ((0.0, 17.99), re.compile(CHILD, re.I)),
    ((10.0, 17.99), re.compile(r"\b(?:adolescen\w*|teen(?:age)?(?:r|rs)?)\b", re.I)),
    ((65.0, INF), re.compile(r"\b(?:elderly|older (?:adults?|patients|people|persons)|geriatric)\b", re.I)),
    ((18.0, INF), re.compile(r"\badults?\b", re.I)),
)
STATED_AGE = re.compile(
    rf"\b({NUM})[- ]?(?:(years?|yrs?|y|months?|mo|weeks?|days?)[- ]?old\b|(?:yo|y/o)\b)|\baged? ({NUM})\b",
    re.I,
)
FEMALE = re.compile(
    r"\b(?:wom[ae]n|female|girls?|(?:post|pre|peri)-?menopausal|pregnan\w*|breast-?\s?feed\w*|lactating"
    r"|mothers?|maternal|postpartum)\b",
    re.I,
)
MALE = re.compile(r"\b(?:m[ae]n|male|boys?)\b", re.I)
NOT_PREGNANT = re.compile(r"\bnon-?\s?pregnant\b", re.I)
PREGNANT = re.compile(r"(?<!non)(?<!non-)(?<!non )\bpregnan\w*", re.I)

# Families whose values exclude one another: a line naming only another value is for another patient.
ATTRIBUTES: dict[str, dict[str, re.Pattern[str]]] = {
    "route": {
        # abbreviations in capitals only ("et al.", "Grade III-IV" are no routes)
        "intravenous": re.compile(
            r"(?<![IVX][-–])\bIV\b(?![-–][IVX])|(?i:\bintravenous(?:ly)?\b|\bumbilical vein\b)"
        ),
        "endotracheal": re.compile(r"\bET\b|(?i:\bendotracheal(?:ly)?\b|\bintratracheal\b)"),
        "oral": re.compile(r"\bPO\b|(?i:\boral(?:ly)?\b|\bby mouth\b)"),
        "intramuscular": re.compile(r"\bIM\b|(?i:\bintramuscular(?:ly)?\b)"),
        "intraosseous": re.compile(r"\bIO\b|(?i:\bintraosseous(?:ly)?\b)"),
        "subcutaneous": re.compile(r"\b(?:SC|SQ)\b|(?i:\bsubcut(?:aneous(?:ly)?)?\b(?!\s+(?:fat|tissue)))"),
        "intraventricular": re.compile(r"\bintraventricular(?:ly)?\b", re.I),
    },
    "vessel": {
        "vein": re.compile(r"\b(?:veins?|venous)\b", re.I),
        "artery": re.compile(r"\b(?:arter(?:y|ies)|arterial)\b", re.I),
    },
    "circulation": {
        "anterior": re.compile(
            r"\b(?:anterior circulation|ica|mca|internal carotid|middle cerebral)\b", re.I
        ),
        "posterior": re.compile(r"\b(?:posterior circulation|basilar|vertebral)\b", re.I),
    },
    "episode": {
        "first": re.compile(
            r"\b(?:first[- ](?:episode|ever|occurrence|recurrence)|initial episode|new[- ]onset)\b", re.I
        ),
        "recurrent": re.compile(r"\b(?:recurren(?:t|ce)|relapse\w*|second episode|repeat episode)\b", re.I),
    },
    "setting": {
        "inpatient": re.compile(r"\b(?:inpatients?|hospitali[sz]ed|admitted)\b", re.I),
        "outpatient": re.compile(r"\b(?:outpatients?|ambulatory)\b", re.I),
    },
}
# The diseases a dose or target is stated for, where guidelines give one drug for several: a
# line under an ACS guideline is no answer for a DVT (issue 59's c4). Read from the line, its
# lead-in and every heading, the title included (``conditions.indication_conflicts``).
INDICATIONS: dict[str, re.Pattern[str]] = {
    "venous thromboembolism": re.compile(
        r"\b(?:DVTs?|VTE|PE)\b|(?i:\bdeep[- ]vein thrombos[ie]s\b|\bpulmonary embol\w*"
        r"|\bvenous thromboembol\w*|\bthromboprophylaxis\b)"
    ),
    "acute coronary syndrome": re.compile(
        r"\b(?:N?STEMI|NSTE-ACS|ACS|UA)\b|(?i:\bacute coronary\b|\bmyocardial infarction\b"
        r"|\bunstable angina\b)"
    ),
    "atrial fibrillation": re.compile(r"\b(?:AF|AFib)\b|(?i:\batrial fibrillation\b|\batrial flutter\b)"),
    "stroke": re.compile(r"\bTIA\b|(?i:\bstrokes?\b|\btransient ischa?emic attack\b)"),
    "pneumonia": re.compile(r"\b(?:CAP|HAP|VAP)\b|(?i:\bpneumonia\b)"),
    "meningitis": re.compile(r"(?i:\bmeningitis\b|\bventriculitis\b)"),
    "urinary tract infection": re.compile(
        r"\bc?UTIs?\b|(?i:\burinary tract infection\w*|\bpyelonephritis\b)"
    ),
    "endocarditis": re.compile(r"\bIE\b|(?i:\bendocarditis\b)"),
}
ROMAN = dict(zip("i ii iii iv v vi vii viii ix x".split(), map(str, range(1, 11)), strict=True))
SUBTYPE = re.compile(r"\btype\s+([0-9]{1,2}[a-z]?|[ivx]{1,4}|[a-z][0-9]?)\b", re.IGNORECASE)


def subtypes(text: str) -> frozenset[str]:
    """The "type X" subtypes ``text`` names, as keys: "type II" and "type 2" are both "2"."""
    return frozenset(ROMAN.get(m[1].lower(), m[1].lower()) for m in SUBTYPE.finditer(text))


# Groups a line or a claim may be stated for (aboutness's populations; the gate's dose scope)
QUALIFIERS: dict[str, re.Pattern[str]] = {
    "children": re.compile(
        rf"\b(?:child(?:ren|hood)?{NOT_PUGH}|p(?:a)?ediatric\w*|infan(?:t|ts|cy)|neonat\w*|newborns?"
        r"|adolescen\w*|toddlers?|kids?|teen(?:ager)?s?)\b"
        # an age under 18 names a child too: "a 14-year-old", "6 months old"
        r"|\b(?:1[0-7]|[1-9])[- ]?(?:years?|yrs?|y)[- ]?old\b"
        r"|\b\d+[- ]?(?:months?|weeks?|days?)[- ]?old\b",
        re.IGNORECASE,
    ),
    "pregnancy": re.compile(
        r"\b(?:pregnan\w*|antenatal|prenatal|obstetric\w*|gestation\w*)\b", re.IGNORECASE
    ),
    "breastfeeding": re.compile(r"\b(?:breast-?\s?feed\w*|lactat\w*|nursing mothers?)\b", re.IGNORECASE),
    "kidney function": re.compile(
        r"\b(?:renal|kidney|crcl|creatinine clearance|e?gfr|ckd|aki|dialysis"
        r"|ha?emodialysis)\b",
        re.IGNORECASE,
    ),
    "liver function": re.compile(r"\b(?:hepatic|liver|cirrho\w*|child-pugh)\b", re.IGNORECASE),
    "older age": re.compile(r"\b(?:elderly|older (?:adults?|patients|people)|geriatric)\b", re.IGNORECASE),
    "obesity": re.compile(r"\b(?:obes\w*|bmi)\b", re.IGNORECASE),
}
