"""The console's screens, one module each, in tab order; ``Panel`` is their common base.

A panel's ``load`` runs on the store thread and returns plain data; its ``show``
runs on the UI thread and only draws it, through ``KeyedTable.sync`` (rows
updated in place by key, the cursor kept on its row). That split keeps the UI
responsive on a big store and is worth keeping.
"""

from .activity import ActivityPanel
from .cases import CasesPanel
from .panel import Panel
from .quarantine import QuarantinePanel
from .ranking import RankingPanel
from .retention import RetentionPanel

PANELS: list[type[Panel]] = [CasesPanel, RankingPanel, QuarantinePanel, RetentionPanel, ActivityPanel]
