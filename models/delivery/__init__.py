"""Delivery context: what leaves the system about events: signed webhooks, in-app
notifications, and the realtime channels and tickets of the WebSocket streams.

Depends on: platform, identity, tenancy.
"""
