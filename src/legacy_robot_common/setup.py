from setuptools import setup

package_name = 'legacy_robot_common'

setup(
    name=package_name,
    version='0.2.0',
    packages=[package_name],
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
        (
            'share/' + package_name + '/config',
            [
                'config/fastdds_profiles.xml',
                'config/fastdds_profiles_jazzy.xml',
                'config/fastdds_lossy_link.xml',
                'config/fastdds_lossy_link_jazzy.xml',
            ],
        ),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='Legacy robot drivers maintainers',
    maintainer_email='maintainers@legacy-robots.dev',
    description='Shared pieces of the legacy robot drivers.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
)
