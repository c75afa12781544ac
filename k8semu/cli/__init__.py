"""k8semu.cli"""
