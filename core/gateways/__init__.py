"""Gateways that push frames straight in over HTTP: a third delivery path beside the inbox's.

each module of ``kinds`` declares one gateway kind (``adapters.Kind``): how one raw
request turns into ``(gateway_message_id, items)``, its signature check and its answer
(pure); ``accounts`` keeps the signed gateway
accounts (a token hash, never the token); ``listener`` answers the posts and
``committer`` hands their frames to ``Receiver.ingest_many``, the one merge point
(``spool`` into the inbox when the store is unavailable; ``posts`` and
``ratelimit`` hold what they share).
"""
