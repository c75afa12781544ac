"""k8semu.node"""
