"""Docker's part of the sandbox (the only package that imports ``docker``): the
:class:`~engine.sandbox.docker.backend.DockerBackend` (containers for jobs, warm pools,
reaping), the attach socket as a byte channel (:mod:`engine.sandbox.docker.channel`),
container settings and hardening (:mod:`engine.sandbox.docker.containers`), declared
environments' images and sdist builds (:mod:`engine.sandbox.docker.environments`) and the
sandbox image build (:mod:`engine.sandbox.docker.image`)."""
