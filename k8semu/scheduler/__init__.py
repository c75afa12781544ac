"""k8semu.scheduler"""
