"""The five papers schedlab implements, by one name each: an author-year key.

Everywhere in the code and the docs a paper is named by its key (``grosof2023``), optionally with
its citation (``Grosof et al. 2023``); the files in the shared papers folder are numbered
000-004, which :data:`PAPERS` maps to.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    key: str  # author-year, e.g. "grosof2023"
    number: str  # file number in the papers folder, e.g. "004"
    cite: str  # short citation, e.g. "Grosof et al. 2023"
    authors: str
    title: str
    venue: str


PAPERS: dict[str, Paper] = {
    p.key: p
    for p in (
        Paper(
            "psychas2019",
            "000",
            "Psychas & Ghaderi 2019",
            "Konstantinos Psychas, Javad Ghaderi",
            "Scheduling Jobs with Random Resource Requirements in Computing Clusters",
            "IEEE INFOCOM 2019",
        ),
        Paper(
            "psychas2018",
            "001",
            "Psychas & Ghaderi 2018",
            "Konstantinos Psychas, Javad Ghaderi",
            "On Non-Preemptive VM Scheduling in the Cloud",
            "POMACS / ACM SIGMETRICS 2018",
        ),
        Paper(
            "psychas2022",
            "002",
            "Psychas & Ghaderi 2022",
            "Konstantinos Psychas, Javad Ghaderi",
            "A Theory of Auto-Scaling for Resource Reservation in Cloud Services",
            "Stochastic Systems 2022",
        ),
        Paper(
            "berg2020",
            "003",
            "Berg et al. 2020",
            "Benjamin Berg, Mor Harchol-Balter, Benjamin Moseley, Weina Wang, Justin Whitehouse",
            "Optimal Resource Allocation for Elastic and Inelastic Jobs",
            "ACM SPAA 2020",
        ),
        Paper(
            "grosof2023",
            "004",
            "Grosof et al. 2023",
            "Isaac Grosof, Ziv Scully, Mor Harchol-Balter, Alan Scheller-Wolf",
            "Optimal Scheduling in the Multiserver-job Model under Heavy Traffic",
            "POMACS / ACM SIGMETRICS 2023",
        ),
    )
}
