"""k8semu.client"""
