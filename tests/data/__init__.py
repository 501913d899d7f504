"""Small trace files shipped with the tests, so that every reader is tested in any clone.

Real excerpts (header kept, first 300 jobs/rows; see README.md in this folder for their sources):
``KTH`` and ``HPC2N`` (Parallel Workloads Archive SWF logs), ``ALIBABA2017`` (cluster-trace-v2017
batch_task). Header excerpts of archive logs whose header annotates values or continues notes
(header verbatim, the first 20-200 jobs): ``CTC_SP2``, ``SDSC_DS``, ``SDSC_PAR``, ``NASA_IPSC``.
Hand-made (``make_google_files.py``): ``GOOGLE2011`` task_events and ``BORG2019`` instance_events
(JSON lines).
"""

from __future__ import annotations

import gzip
from pathlib import Path

DATA = Path(__file__).parent
KTH = DATA / "KTH-SP2-1996-2.1-cln.head300.swf.gz"
HPC2N = DATA / "HPC2N-2002-2.1-cln.head300.swf"
CTC_SP2 = DATA / "CTC-SP2-1996-3.1-cln.head50.swf"
SDSC_DS = DATA / "SDSC-DS-2004-2.1-cln.head200.swf"
SDSC_PAR = DATA / "SDSC-Par-1996-3.1-cln.head200.swf"
NASA_IPSC = DATA / "NASA-iPSC-1993-3.1-cln.head20.swf"
ALIBABA2017 = DATA / "alibaba_batch_task_v2017.head300.csv"
GOOGLE2011 = DATA / "google2011_task_events.hand.csv"
BORG2019 = DATA / "borg2019_instance_events.hand.json"
EXCERPTS = {
    "kth": (KTH, "swf"),
    "hpc2n": (HPC2N, "swf"),
    "alibaba2017": (ALIBABA2017, "alibaba2017"),
    "google2011": (GOOGLE2011, "google2011"),
    "borg2019": (BORG2019, "borg2019"),
}


def text_lines(path: Path) -> list[str]:
    """The lines of a shipped file (gunzipped), without line ends."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode().splitlines()


def swf_parts(path: Path = KTH) -> tuple[list[str], list[str]]:
    """(header comment lines, job lines) of a shipped SWF log."""
    lines = text_lines(path)
    return [ln for ln in lines if ln.startswith(";")], [
        ln for ln in lines if ln.strip() and not ln.startswith(";")
    ]
