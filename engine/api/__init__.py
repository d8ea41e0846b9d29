"""The HTTP API's edge: its routes (:mod:`engine.api.routes`), request and answer schemas,
its OpenAPI document and ``/docs``. The app that serves it is :func:`engine.app.create_app`."""
