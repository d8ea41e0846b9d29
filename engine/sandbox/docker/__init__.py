"""Docker's part of the sandbox: the :class:`~engine.sandbox.docker.backend.DockerBackend`
(the only module that imports ``docker``), container settings and hardening
(:mod:`engine.sandbox.docker.containers`) and the sandbox image build
(:mod:`engine.sandbox.docker.image`)."""
