"""The browser console's server side: textual-serve's page (``app_index.html``) and the guard in
front of it (``guard``): Host and Origin checks, the session cap, the login for ``--public``."""
