"""k8semu.api"""
