"""k8semu.store"""
