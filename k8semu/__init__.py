"""k8semu: a Kubernetes cluster emulated in one Python process, in virtual time."""

__version__ = "0.1.0"
