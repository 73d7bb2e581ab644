"""The small corpora the knowledge tests share: three files whose entities spaCy finds (the
entity graph), and short documents on four topics in JSON lines (the RAPTOR tree)."""

from __future__ import annotations

import json
from pathlib import Path

KERENSKY = ("Alexander Kerensky led the Russian Provisional Government in Petrograd. "
            "The Bolsheviks overthrew Alexander Kerensky in Petrograd in October 1917.\n")
LENIN = ("Vladimir Lenin led the Bolsheviks. Vladimir Lenin returned to Petrograd from Switzerland "
         "in April 1917 and the Bolsheviks welcomed him.\n")
VALENCIA = "Valencia CF is a football club in Spain. Mario Kempes played for Valencia CF in Spain.\n"
GRAPH_TABLES = ("kg_entities", "kg_mentions", "kg_relations", "kg_sources", "kg_communities", "kg_community_summaries")


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kerensky.txt").write_text(KERENSKY)
    (folder / "lenin.txt").write_text(LENIN)
    (folder / "valencia.txt").write_text(VALENCIA)
    return folder


RAPTOR_TABLES = ("raptor_nodes", "raptor_leaves", "raptor_sources")
TOPICS = {
    "cancer": ("DNA methylation silences tumour suppressor genes in {x} cancer cells.",
               "Chemotherapy resistance in {x} tumours depends on drug efflux pumps."),
    "bread": ("Sourdough bread rises because wild yeast ferments the {x} flour.",
              "Bakers knead {x} dough until the gluten network is elastic."),
    "robots": ("The {x} robot plans a collision-free path with a sampling-based planner.",
               "A Kalman filter fuses the {x} robot's wheel odometry and lidar scans."),
    "football": ("The {x} football club won the league after a late goal from its striker.",
                 "Supporters of the {x} club filled the stadium for the cup final."),
}
WORDS = ["red", "old", "northern", "small", "famous", "young", "quiet", "new", "large", "coastal"]


def documents(topics: list[str], offset: int = 0) -> str:
    """One JSON line per short document, ten per topic."""
    lines = []
    for topic in topics:
        first, second = TOPICS[topic]
        for i, word in enumerate(WORDS):
            text = first.format(x=word) + " " + second.format(x=WORDS[(i + 3) % len(WORDS)])
            lines.append(json.dumps({"_id": f"{topic}-{i + offset}", "title": "", "text": text}))
    return "\n".join(lines) + "\n"
