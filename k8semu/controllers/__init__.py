"""k8semu.controllers"""
