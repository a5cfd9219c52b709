"""The situation report: the figures of a period computed from the store (``figures``), the
period itself (``period``), and its renderings (``charts``, ``html``, ``pdf``) and schedule."""
