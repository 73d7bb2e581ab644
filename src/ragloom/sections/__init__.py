"""The sections of ``ragloom.yaml``, by the part of ragloom that reads them; ``config.Config`` puts them
together and loads them. A component's own options are not here: each declares them beside its code
(``Options``), and the section that chooses it carries them (``options.ComponentSection``)."""
